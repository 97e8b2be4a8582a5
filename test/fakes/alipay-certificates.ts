import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What an Alipay app in public-key-certificate mode holds: its own certificate, Alipay's, and Alipay's root file. */
export interface AlipayTestCertificates {
  /** appCertPublicKey_<app_id>.crt: the app's public key, issued by Alipay's CA from the app's CSR. */
  appCert: string;
  /** alipayCertPublicKey_RSA2.crt: Alipay's public key. */
  alipayCert: string;
  /** alipayRootCert.crt: Alipay's roots, an RSA/SHA1 one, an EC one (Alipay's is SM2) and an RSA/SHA256 one, in one file. */
  rootCert: string;
}

/**
 * Certificates shaped like Alipay's (open.alipay.com → 接口加签方式 → 公钥证书), made by openssl at
 * test time: three roots, the RSA/SHA256 one issuing Alipay's certificate and the app's (from a
 * CSR of the app's key, as Alipay's key tool makes one). Serial numbers are large random ones, so
 * an SN computed with a number type that rounds would not match.
 */
export function alipayCertificates(keys: { appPrivateKey: string; alipayPrivateKey: string }): AlipayTestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'alipay-certs-'));
  const openssl = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  const serial = (): string => `0x${randomBytes(16).toString('hex').replace(/^0/, '1')}`;
  const root = (name: string, key: string[], digest: string, subject: string): void =>
    openssl(
      'req',
      '-x509',
      ...key,
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      '-subj',
      subject,
      '-days',
      '30',
      digest,
      '-set_serial',
      serial(),
    );
  try {
    root('r1', ['-newkey', 'rsa:2048'], '-sha1', '/C=CN/O=Ant Financial/OU=Certification Authority/CN=Ant Financial Certification Authority R1');
    root(
      'e1',
      ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'],
      '-sha256',
      '/C=CN/O=Ant Financial/OU=Certification Authority/CN=Ant Financial Certification Authority E1',
    );
    root('r2', ['-newkey', 'rsa:2048'], '-sha256', '/C=CN/O=Ant Financial/OU=Certification Authority/CN=Ant Financial Certification Authority Class 2 R1');
    const issue = (name: string, privateKey: string, subject: string): string => {
      writeFileSync(join(dir, `${name}.key`), privateKey);
      openssl('req', '-new', '-utf8', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`);
      openssl(
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'r2.pem',
        '-CAkey',
        'r2.key',
        '-set_serial',
        serial(),
        '-days',
        '30',
        '-sha256',
        '-out',
        `${name}.pem`,
      );
      return readFileSync(join(dir, `${name}.pem`), 'utf8');
    };
    return {
      appCert: issue('app', keys.appPrivateKey, '/C=CN/O=测试商户/OU=Alipay/CN=2088102177846880'),
      alipayCert: issue('alipay', keys.alipayPrivateKey, '/C=CN/O=支付宝(中国)网络技术有限公司/OU=支付宝开放平台/CN=2088102177649450'),
      rootCert: ['r1', 'e1', 'r2'].map((name) => readFileSync(join(dir, `${name}.pem`), 'utf8')).join(''),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
