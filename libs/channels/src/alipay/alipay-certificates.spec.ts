import { generateKeyPairSync } from 'node:crypto';
import { alipayCertificates } from '../../../../test/fakes/alipay-certificates';
import { AlipayOracle } from '../../../../test/fakes/provider-sdks';
import { parseChannelConfig } from '../channel-config';
import { alipayCertPublicKey, alipayCertSn, alipayRootCertSn } from './alipay-certificates';

const pair = () =>
  generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });

describe('Alipay certificate SNs (public-key-certificate mode)', () => {
  const app = pair();
  const alipay = pair();
  const certificates = alipayCertificates({ appPrivateKey: app.privateKey, alipayPrivateKey: alipay.privateKey });
  // alipay-sdk 4.14 is the oracle: md5 of the reversed issuer and the decimal serial; the root's RSA entries only, joined by _.
  const sdk = AlipayOracle.certificateSns(certificates, app.privateKey);

  it('computes app_cert_sn and alipay_cert_sn as alipay-sdk does', () => {
    expect(alipayCertSn(certificates.appCert)).toBe(sdk.appCertSn);
    expect(alipayCertSn(certificates.alipayCert)).toBe(sdk.alipayCertSn);
    expect(alipayCertSn(certificates.appCert)).not.toBe(alipayCertSn(certificates.alipayCert));
  });

  it('computes alipay_root_cert_sn from the RSA roots only (SHA1 and SHA256), as alipay-sdk does', () => {
    const sn = alipayRootCertSn(certificates.rootCert);
    expect(sn).toBe(sdk.alipayRootCertSn);
    expect(sn.split('_')).toHaveLength(2);
    const [sha1Root, ecRoot] = certificates.rootCert.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n/g)!;
    expect(() => alipayRootCertSn(ecRoot)).toThrow(/no RSA certificate/);
    expect(alipayRootCertSn(sha1Root)).toBe(sn.split('_')[0]);
  });

  it("reads Alipay's public key from its certificate", () => {
    expect(alipayCertPublicKey(certificates.alipayCert)).toBe(alipay.publicKey);
  });

  it('a certificate-mode config: the three certificates (PEM or bare base64), app_cert the certificate of private_key, a root chain with an RSA root', () => {
    const config = {
      app_id: '2021004100000001',
      private_key: app.privateKey,
      app_cert: certificates.appCert,
      alipay_cert: certificates.alipayCert,
      alipay_root_cert: certificates.rootCert,
    };
    expect(parseChannelConfig(config, { adapter: 'alipay' })).toEqual(config);
    const bareApp = certificates.appCert.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
    expect(alipayCertSn(parseChannelConfig({ ...config, app_cert: bareApp }, { adapter: 'alipay' }).app_cert!)).toBe(sdk.appCertSn);
    expect(() => parseChannelConfig({ ...config, app_cert: certificates.alipayCert }, { adapter: 'alipay' })).toThrow(
      /app_cert is not the certificate of config.private_key/,
    );
    const ecRoot = certificates.rootCert.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n/g)![1];
    expect(() => parseChannelConfig({ ...config, alipay_root_cert: ecRoot }, { adapter: 'alipay' })).toThrow(/config.alipay_root_cert must be certificates/);
    expect(() => parseChannelConfig({ ...config, alipay_public_key: alipay.publicKey }, { adapter: 'alipay' })).toThrow(
      /config mixes public-key mode and public-key certificate mode/,
    );
    const { alipay_cert: _cert, ...missing } = config;
    expect(() => parseChannelConfig(missing, { adapter: 'alipay' })).toThrow(/config is missing alipay_cert \(public-key certificate mode\)/);
  });
});
