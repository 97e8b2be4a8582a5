import { createCipheriv, generateKeyPairSync } from 'node:crypto';
import { alipaySignContent, beijingTime, rawJsonMember, rsa2Sign, rsa2Verify } from './alipay.adapter';
import { parseChannelConfig } from './channel-config';
import { decryptResource, rfc3339Beijing, wechatpayAuthorization } from './wechatpay.adapter';

const keys = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});

describe('alipay protocol pieces', () => {
  it('signs the sorted non-empty parameters but sign; notifications also skip sign_type', () => {
    expect(alipaySignContent({ b: '2', a: '1', sign: 'x', empty: '', sign_type: 'RSA2' })).toBe('a=1&b=2&sign_type=RSA2');
    expect(alipaySignContent({ b: '2', a: '1', sign: 'x', sign_type: 'RSA2' }, ['sign', 'sign_type'])).toBe('a=1&b=2');
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
