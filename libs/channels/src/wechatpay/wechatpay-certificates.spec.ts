import { X509Certificate, randomBytes } from 'node:crypto';
import { platformCertificate } from '../../../../test/fakes/wechatpay-gateway';
import { WechatpayOracle } from '../../../../test/fakes/provider-sdks';
import type { ChannelAnswer } from '../channel-http';
import { CERTIFICATES_REFRESH_MS, PlatformCertificates, UNKNOWN_SERIAL_REFETCH_MS } from './wechatpay-certificates';

describe('PlatformCertificates (WeChat Pay platform-certificate mode)', () => {
  const apiV3Key = randomBytes(16).toString('hex');
  const [a, b] = [platformCertificate(), platformCertificate()];

  /** GET /v3/certificates as WeChat answers it: each certificate encrypted (wechatpay-axios-plugin's AesGcm), signed by `signer`. */
  function list(certificates: (typeof a)[], signer = certificates[certificates.length - 1], key = apiV3Key): ChannelAnswer {
    const data = certificates.map(({ certificate, serial }) => {
      const nonce = randomBytes(6).toString('hex');
      return {
        serial_no: serial,
        effective_time: new X509Certificate(certificate).validFromDate.toISOString(),
        expire_time: new X509Certificate(certificate).validToDate.toISOString(),
        encrypt_certificate: {
          algorithm: 'AEAD_AES_256_GCM',
          nonce,
          associated_data: 'certificate',
          ciphertext: WechatpayOracle.encrypt(certificate, key, nonce, 'certificate'),
        },
      };
    });
    const body = JSON.stringify({ data });
    return { status: 200, headers: WechatpayOracle.signatureHeaders(body, { privateKey: signer.privateKey, serial: signer.serial }), body };
  }

  it('fetches once, then for an unknown serial at most once a minute, and again when due', async () => {
    let now = Date.now();
    const store = new PlatformCertificates(apiV3Key, () => now);
    let answer = list([a]);
    const fetch = jest.fn(async () => answer);
    await store.ensure(a.serial, fetch);
    expect(fetch).toHaveBeenCalledTimes(1);
    expect(store.key(a.serial)).not.toBeNull();
    await store.ensure(a.serial, fetch);
    expect(fetch).toHaveBeenCalledTimes(1);

    // WeChat rotates: b is listed and signs. An answer naming b has the list fetched again.
    answer = list([a, b]);
    await store.ensure(b.serial, fetch);
    expect(fetch).toHaveBeenCalledTimes(2);
    expect(store.key(b.serial)).not.toBeNull();
    expect(store.serials()).toHaveLength(2);
    // Serials nobody issued: no fetch within the minute, one after it.
    await store.ensure('0123', fetch);
    await store.ensure('4567', fetch);
    expect(fetch).toHaveBeenCalledTimes(2);
    now += UNKNOWN_SERIAL_REFETCH_MS;
    await store.ensure('89AB', fetch);
    expect(fetch).toHaveBeenCalledTimes(3);
    // Twice a day whatever happens (the certificates here expire in 2 days: an hour before is later).
    now += CERTIFICATES_REFRESH_MS;
    await store.ensure(a.serial, fetch);
    expect(fetch).toHaveBeenCalledTimes(4);
  });

  it('trusts a list only when it decrypts under the APIv3 key and its signature verifies with a certificate it carries; a failed fetch keeps what is held', async () => {
    const store = new PlatformCertificates(apiV3Key);
    await expect(store.ensure(null, async () => list([a], a, randomBytes(16).toString('hex')))).rejects.toThrow(/does not verify|no certificate/);
    await expect(store.ensure(null, async () => ({ ...list([a]), body: list([a]).body.replace('"data"', '"data" ') }))).rejects.toThrow(/does not verify/);
    await expect(store.ensure(null, async () => ({ status: 500, headers: {}, body: '{}' }))).rejects.toThrow(/HTTP 500/);
    expect(store.key(a.serial)).toBeNull();
    await store.ensure(null, async () => list([a]));
    expect(store.key(a.serial)).not.toBeNull();
    const later = new PlatformCertificates(apiV3Key, () => Date.now() + 3 * 24 * 3600_000);
    // Expired certificates (these last 2 days) are not held.
    await expect(later.ensure(null, async () => list([a]))).rejects.toThrow(/no certificate in force/);
  });
});
