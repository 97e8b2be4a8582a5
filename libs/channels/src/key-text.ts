import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';

/**
 * Keys and certificates as operators paste them (SPEC 6 Key modes): PEM, or the bare base64 the
 * providers' consoles and key tools show (Alipay's key tool writes an app private key as PKCS#8
 * for Java or PKCS#1 for the rest, its public keys as SPKI; WeChat Pay's console shows its public
 * key as SPKI). Each reader answers PEM, the one form the adapters use, or throws.
 */

const BARE_BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The DER bytes of a bare base64 text (whitespace and line breaks ignored), or null when it is not that. */
function bareDer(text: string): Buffer | null {
  const compact = text.replace(/\s+/g, '');
  if (compact.length < 64 || compact.length % 4 !== 0 || !BARE_BASE64.test(compact)) return null;
  return Buffer.from(compact, 'base64');
}

const isPem = (text: string): boolean => /-----BEGIN [A-Z0-9 ]+-----/.test(text);

/** A private key as PEM: PEM as given, or bare base64 of PKCS#8 or PKCS#1 DER (made PKCS#8 PEM). */
export function privateKeyPem(text: string): string {
  if (isPem(text)) {
    createPrivateKey(text);
    return text;
  }
  const der = bareDer(text);
  if (!der) throw new Error('not a key');
  for (const type of ['pkcs8', 'pkcs1'] as const) {
    try {
      return createPrivateKey({ key: der, format: 'der', type }).export({ format: 'pem', type: 'pkcs8' }).toString();
    } catch {
      // the other encoding, or not a key at all
    }
  }
  throw new Error('not a key');
}

/** A public key as PEM: PEM as given, or bare base64 of SPKI (or PKCS#1) DER (made SPKI PEM). */
export function publicKeyPem(text: string): string {
  if (isPem(text)) {
    createPublicKey(text);
    return text;
  }
  const der = bareDer(text);
  if (!der) throw new Error('not a key');
  for (const type of ['spki', 'pkcs1'] as const) {
    try {
      return createPublicKey({ key: der, format: 'der', type }).export({ format: 'pem', type: 'spki' }).toString();
    } catch {
      // the other encoding, or not a key at all
    }
  }
  throw new Error('not a key');
}

const CERTIFICATE_PEM = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** One certificate as PEM: PEM as given, or the bare base64 of its DER. */
export function certificatePem(text: string): string {
  const [pem, ...more] = certificatePems(text);
  if (more.length > 0) throw new Error('more than one certificate');
  return pem;
}

/** One or more certificates (a chain such as Alipay's root certificate file), each as PEM, in their order. */
function certificatePems(text: string): string[] {
  if (isPem(text)) {
    const pems = text.match(CERTIFICATE_PEM) ?? [];
    if (pems.length === 0) throw new Error('no certificate');
    for (const pem of pems) new X509Certificate(pem);
    return pems.map((pem) => `${pem}\n`);
  }
  const der = bareDer(text);
  if (!der) throw new Error('not a certificate');
  return [new X509Certificate(der).toString()];
}

/**
 * A chain's PEM blocks as given, not read by OpenSSL: a root file may carry a certificate of an
 * algorithm OpenSSL was built without (Alipay's SM2 root); whoever uses the chain reads what it needs.
 */
export function certificateChainPem(text: string): string {
  if (isPem(text)) {
    const pems = text.match(CERTIFICATE_PEM) ?? [];
    if (pems.length === 0) throw new Error('no certificate');
    return pems.map((pem) => `${pem}\n`).join('');
  }
  const der = bareDer(text);
  if (!der) throw new Error('not a certificate');
  return `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END CERTIFICATE-----\n`;
}
