import { createCipheriv, createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { AlipaySdk } from 'alipay-sdk';
import { Aes, Formatter, Rsa } from 'wechatpay-axios-plugin';
import { alipaySignContent, beijingTime, rawJsonMember, rsa2Sign, rsa2Verify, verifiedAnswer } from './alipay/alipay-wire';
import { parseChannelConfig } from './channel-config';
import { decryptResource, rfc3339Beijing, wechatpayAuthorization } from './wechatpay/wechatpay-wire';

const keys = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});

describe('alipay protocol pieces', () => {
  it('signs the sorted parameters but sign, an empty value as key=; notifications also skip sign_type', () => {
    expect(alipaySignContent({ b: '2', a: '1', sign: 'x', empty: '', sign_type: 'RSA2' })).toBe('a=1&b=2&empty=&sign_type=RSA2');
    expect(alipaySignContent({ b: '2', a: '1', sign: 'x', sign_type: 'RSA2', passback_params: '' }, ['sign', 'sign_type'])).toBe('a=1&b=2&passback_params=');
  });

  // alipay-sdk 4.14 is the oracle: code we did not write, reading Alipay's rule its own way.
  const sdk = new AlipaySdk({ appId: '2021004100000001', privateKey: keys.privateKey, alipayPublicKey: keys.publicKey, keyType: 'PKCS8' });
  it('agrees with alipay-sdk both ways: what the SDK signs verifies here, what we sign verifies in the SDK, empty values included', () => {
    const sdkSigned = Object.fromEntries(new URLSearchParams(sdk.sdkExecute('alipay.trade.refund', { bizContent: { out_trade_no: '1' }, notifyUrl: '' })));
    expect(sdkSigned.notify_url).toBe('');
    expect(rsa2Verify(alipaySignContent(sdkSigned), sdkSigned.sign, keys.publicKey)).toBe(true);
    const ours: Record<string, string> = {
      app_id: '2021004100000001',
      method: 'alipay.trade.query',
      sign_type: 'RSA2',
      return_url: '',
      biz_content: '{"a":"\\/"}',
    };
    expect(sdk.checkNotifySignV2({ ...ours, sign: rsa2Sign(alipaySignContent(ours), keys.privateKey) })).toBe(true);
    const notification: Record<string, string> = { out_trade_no: '1', trade_status: 'TRADE_SUCCESS', body: '', sign_type: 'RSA2' };
    const notificationSign = rsa2Sign(alipaySignContent(notification, ['sign', 'sign_type']), keys.privateKey);
    expect(sdk.checkNotifySignV2({ ...notification, sign: notificationSign })).toBe(true);
  });

  it("reads an answer as alipay-sdk does (the member's exact text, \\/ escapes kept); an unsigned error is reported by its code and message", () => {
    const member = '{"code":"10000","msg":"Success","bill_download_url":"http:\\/\\/dwbillcenter.alipay.com\\/x?a=1"}';
    const body = `{"alipay_data_dataservice_bill_downloadurl_query_response":${member},"sign":"${rsa2Sign(member, keys.privateKey)}"}`;
    expect(() => sdk.checkResponseSign(body, 'alipay_data_dataservice_bill_downloadurl_query_response', JSON.parse(body).sign, '')).not.toThrow();
    expect(verifiedAnswer('alipay.data.dataservice.bill.downloadurl.query', { status: 200, body }, keys.publicKey).bill_download_url).toBe(
      'http://dwbillcenter.alipay.com/x?a=1',
    );
    const unsigned = '{"error_response":{"code":"40002","msg":"Invalid Arguments","sub_code":"isv.invalid-signature","sub_msg":"验签出错"}}';
    expect(() => verifiedAnswer('alipay.trade.refund', { status: 200, body: unsigned }, keys.publicKey)).toThrow(
      'alipay alipay.trade.refund: alipay 40002 isv.invalid-signature 验签出错 (unsigned answer, outcome unknown)',
    );
    expect(() => verifiedAnswer('alipay.trade.refund', { status: 200, body: body.replace('downloadurl_query', 'x') }, keys.publicKey)).toThrow(/without/);
  });
  it('RSA2 verifies its own signature only, and refuses junk without throwing', () => {
    const sign = rsa2Sign('a=1', keys.privateKey);
    expect(rsa2Verify('a=1', sign, keys.publicKey)).toBe(true);
    expect(rsa2Verify('a=2', sign, keys.publicKey)).toBe(false);
    expect(rsa2Verify('a=1', 'not base64 !', keys.publicKey)).toBe(false);
    expect(rsa2Verify('a=1', undefined, keys.publicKey)).toBe(false);
  });
  it('takes the exact text of the response member, braces inside strings included', () => {
    const body = '{"alipay_trade_query_response":{"code":"10000","msg":"a}\\"{b","n":{"x":1}},"sign":"S"}';
    expect(rawJsonMember(body, 'alipay_trade_query_response')).toBe('{"code":"10000","msg":"a}\\"{b","n":{"x":1}}');
    expect(rawJsonMember(body, 'other_response')).toBeNull();
    expect(rawJsonMember('{"alipay_trade_query_response":{"code":"1"', 'alipay_trade_query_response')).toBeNull();
  });
  it('writes Beijing time', () => {
    expect(beijingTime(new Date('2026-01-01T16:30:00Z'))).toBe('2026-01-02 00:30:00');
    expect(rfc3339Beijing(new Date('2026-01-01T16:30:00Z'))).toBe('2026-01-02T00:30:00+08:00');
  });
});

describe('wechatpay protocol pieces', () => {
  const key = '0123456789abcdef0123456789abcdef';
  const encrypt = (plain: string, nonce: string, aad: string): string => {
    const cipher = createCipheriv('aes-256-gcm', Buffer.from(key), Buffer.from(nonce));
    cipher.setAAD(Buffer.from(aad));
    return Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]).toString('base64');
  };
  it('AEAD_AES_256_GCM: decrypts, and refuses another key, nonce, associated data or a changed byte', () => {
    const ciphertext = encrypt('{"a":1}', 'nonce1234567', 'transaction');
    expect(decryptResource({ ciphertext, nonce: 'nonce1234567', associated_data: 'transaction' }, key)).toBe('{"a":1}');
    expect(decryptResource({ ciphertext, nonce: 'nonce1234567', associated_data: 'transaction' }, 'f'.repeat(32))).toBeNull();
    expect(decryptResource({ ciphertext, nonce: 'nonce7654321', associated_data: 'transaction' }, key)).toBeNull();
    expect(decryptResource({ ciphertext, nonce: 'nonce1234567', associated_data: 'refund' }, key)).toBeNull();
    const bytes = Buffer.from(ciphertext, 'base64');
    bytes[0] ^= 1;
    expect(decryptResource({ ciphertext: bytes.toString('base64'), nonce: 'nonce1234567', associated_data: 'transaction' }, key)).toBeNull();
    expect(decryptResource({ ciphertext: 'AAAA', nonce: 'nonce1234567' }, key)).toBeNull();
  });
  it('agrees with wechatpay-axios-plugin: its Formatter and Rsa verify our Authorization, its AesGcm encrypts what we decrypt', () => {
    const header = wechatpayAuthorization(
      { method: 'GET', path: '/v3/refund/domestic/refunds/R1', body: '' },
      { mchid: '1', serialNo: 'AB', privateKey: keys.privateKey },
    );
    const f = Object.fromEntries([...header.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    expect(Rsa.verify(Formatter.request('GET', '/v3/refund/domestic/refunds/R1', f.timestamp, f.nonce_str, ''), f.signature, keys.publicKey)).toBe(true);
    const ciphertext = Aes.AesGcm.encrypt('{"a":1}', key, 'nonce1234567', 'refund');
    expect(decryptResource({ ciphertext, nonce: 'nonce1234567', associated_data: 'refund' }, key)).toBe('{"a":1}');
  });

  it('the Authorization header signs METHOD, path, timestamp, nonce and body', () => {
    const header = wechatpayAuthorization(
      { method: 'POST', path: '/v3/x', body: '{}' },
      { mchid: '1', serialNo: 'AB', privateKey: keys.privateKey },
      1700000000,
      'n1',
    );
    const signature = /signature="([^"]+)"/.exec(header)![1];
    expect(header).toMatch(/^WECHATPAY2-SHA256-RSA2048 mchid="1",nonce_str="n1",signature="[^"]+",timestamp="1700000000",serial_no="AB"$/);
    expect(rsa2Verify('POST\n/v3/x\n1700000000\nn1\n{}\n', signature, keys.publicKey)).toBe(true);
  });
});

describe('provider channel configs (checked at channel:create)', () => {
  const wechat = {
    mchid: '1900000109',
    appid: 'wx1',
    merchant_serial_no: 'AB',
    private_key: keys.privateKey,
    apiv3_key: '0123456789abcdef0123456789abcdef',
    platform_public_key: keys.publicKey,
    platform_public_key_id: 'PUB_KEY_ID_0114232134912410000000000000',
  };
  it('accepts a complete wechatpay config and refuses a short APIv3 key, a bad key id, a bad certificate', () => {
    expect(parseChannelConfig(wechat, { adapter: 'wechatpay' })).toEqual(wechat);
    expect(() => parseChannelConfig({ ...wechat, apiv3_key: 'short' }, { adapter: 'wechatpay' })).toThrow(/apiv3_key must be 32 characters/);
    expect(() => parseChannelConfig({ ...wechat, platform_public_key_id: 'KEY1' }, { adapter: 'wechatpay' })).toThrow(/PUB_KEY_ID_/);
    expect(() => parseChannelConfig({ ...wechat, platform_certificates: { AB12: keys.publicKey } }, { adapter: 'wechatpay' })).toThrow(/certificate in PEM/);
    expect(() => parseChannelConfig({ ...wechat, platform_certificates: ['x'] }, { adapter: 'wechatpay' })).toThrow(/serial number -> PEM/);
  });
  /** A PEM's bare base64, as Alipay's key tool and WeChat Pay's console show a key. */
  const bare = (pem: string): string => pem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');

  it('takes keys as PEM or as the bare base64 consoles show (PKCS#8 or PKCS#1 private keys, SPKI public keys), stored as PEM', () => {
    const pkcs1 = createPrivateKey(keys.privateKey).export({ format: 'pem', type: 'pkcs1' }).toString();
    for (const privateKey of [bare(keys.privateKey), bare(pkcs1)]) {
      const parsed = parseChannelConfig({ ...wechat, private_key: privateKey, platform_public_key: bare(keys.publicKey) }, { adapter: 'wechatpay' });
      expect(parsed.private_key).toMatch(/^-----BEGIN PRIVATE KEY-----/);
      // wechatpay-axios-plugin's own reading of the bare forms (Rsa.fromPkcs8 / fromPkcs1 / fromSpki) is the same key.
      const oracle = privateKey === bare(pkcs1) ? Rsa.fromPkcs1(privateKey, Rsa.KEY_TYPE_PRIVATE) : Rsa.fromPkcs8(privateKey);
      expect(createPrivateKey(parsed.private_key!).export({ format: 'der', type: 'pkcs8' })).toEqual(
        (oracle as ReturnType<typeof createPrivateKey>).export({ format: 'der', type: 'pkcs8' }),
      );
      expect(createPublicKey(parsed.platform_public_key!).export({ format: 'der', type: 'spki' })).toEqual(
        (Rsa.fromSpki(bare(keys.publicKey)) as ReturnType<typeof createPublicKey>).export({ format: 'der', type: 'spki' }),
      );
    }
    expect(() => parseChannelConfig({ ...wechat, private_key: bare(keys.publicKey) }, { adapter: 'wechatpay' })).toThrow(
      /config.private_key must be a private key in PEM or the bare base64 the console shows/,
    );
  });

  it('wechatpay key modes: the public key with its id, or neither (platform certificates fetched); never half of one', () => {
    const { platform_public_key: _key, platform_public_key_id: _id, ...certificateMode } = wechat;
    expect(parseChannelConfig(certificateMode, { adapter: 'wechatpay' })).toEqual(certificateMode);
    expect(() => parseChannelConfig({ ...certificateMode, platform_public_key: keys.publicKey }, { adapter: 'wechatpay' })).toThrow(
      /config is missing platform_public_key_id \(public-key mode\)/,
    );
  });

  it("modes: a list of the provider's own, jsapi only with app_secret", () => {
    expect(parseChannelConfig({ ...wechat, modes: 'native, h5' }, { adapter: 'wechatpay' }).modes).toEqual(['native', 'h5']);
    expect(parseChannelConfig({ ...wechat, modes: ['jsapi'], app_secret: 'a'.repeat(32) }, { adapter: 'wechatpay' }).modes).toEqual(['jsapi']);
    expect(() => parseChannelConfig({ ...wechat, modes: ['jsapi'] }, { adapter: 'wechatpay' })).toThrow(/jsapi, which needs app_secret/);
    for (const bad of [[], ['page'], ['native', 'native'], 'qr', 7])
      expect(() => parseChannelConfig({ ...wechat, modes: bad }, { adapter: 'wechatpay' })).toThrow(
        /config.modes must be a list of distinct native, h5, jsapi/,
      );
    expect(() => parseChannelConfig({ modes: ['page'] }, { adapter: 'epay' })).toThrow(/"modes" is not allowed/);
  });

  it('never shows a value in its messages', () => {
    const messages: string[] = [];
    for (const bad of [
      { ...wechat, private_key: 'secret-private-value' },
      { ...wechat, apiv3_key: 'secret-short' },
      { ...wechat, merchant_no: 'secret-x' },
    ]) {
      try {
        parseChannelConfig(bad, { adapter: 'wechatpay' });
      } catch (err) {
        messages.push((err as Error).message);
      }
    }
    expect(messages).toHaveLength(3);
    expect(messages.join(' ')).not.toContain('secret-');
  });
});
