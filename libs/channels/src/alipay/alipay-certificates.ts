import { X509Certificate, createHash } from 'node:crypto';

/**
 * Alipay's public-key-certificate mode (SPEC 6 Key modes): a request names the app's certificate
 * and Alipay's root chain by serial numbers (`app_cert_sn`, `alipay_root_cert_sn`), computed as
 * Alipay's own SDKs compute them (alipay-sdk `antcertutil.getSN`, the Java SDK's
 * `AlipaySignature.getCertSN`): md5 hex of the issuer's attributes in reverse order written
 * `short=value` joined by `,`, followed by the serial number in decimal; for the root chain, the
 * SNs of its RSA-signed certificates only (signature OID 1.2.840.113549.1.1.*), joined by `_`
 * (Alipay's root file also carries an SM2 root that no RSA request names). The few DER fields
 * this needs are read here, so any certificate Alipay ships is read whether or not OpenSSL knows
 * its algorithm.
 */

/** The short names alipay-sdk (through @fidm/x509) writes; an attribute it does not name is written with an empty name. */
const SHORT_NAMES: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '1.2.840.113549.1.9.1': 'E',
};
const RSA_SIGNATURES = '1.2.840.113549.1.1.';

interface Der {
  tag: number;
  /** The content octets. */
  body: Buffer;
  /** Where the next element starts in the buffer it was read from. */
  end: number;
}

function readDer(buffer: Buffer, at: number): Der {
  const tag = buffer[at];
  let length = buffer[at + 1];
  let start = at + 2;
  if (tag === undefined || length === undefined) throw new Error('truncated DER');
  if (length & 0x80) {
    const octets = length & 0x7f;
    if (octets === 0 || octets > 4) throw new Error('unsupported DER length');
    length = 0;
    for (let i = 0; i < octets; i++) length = length * 256 + buffer[start + i];
    start += octets;
  }
  if (start + length > buffer.length) throw new Error('truncated DER');
  return { tag, body: buffer.subarray(start, start + length), end: start + length };
}

function children(element: Der): Der[] {
  const out: Der[] = [];
  for (let at = 0; at < element.body.length;) {
    const child = readDer(element.body, at);
    out.push(child);
    at = child.end;
  }
  return out;
}

function oid(body: Buffer): string {
  const parts = [Math.floor(body[0] / 40), body[0] % 40];
  let value = 0;
  for (const byte of body.subarray(1)) {
    value = value * 128 + (byte & 0x7f);
    if (!(byte & 0x80)) {
      parts.push(value);
      value = 0;
    }
  }
  return parts.join('.');
}

function text(element: Der): string {
  switch (element.tag) {
    case 0x1e: // BMPString: UTF-16 big-endian
      return Buffer.from(element.body).swap16().toString('utf16le');
    case 0x14: // T61String, read as Latin-1 as most readers do
      return element.body.toString('latin1');
    default: // UTF8String, PrintableString, IA5String and the like
      return element.body.toString('utf8');
  }
}

/** What an SN is made of: the issuer's attributes in order, the serial number, the signature algorithm. */
interface CertificateFields {
  issuer: { shortName: string; value: string }[];
  serialHex: string;
  signatureOid: string;
}

function fields(der: Buffer): CertificateFields {
  const [tbs, signatureAlgorithm] = children(readDer(der, 0));
  const parts = children(tbs);
  // version is [0] EXPLICIT and optional
  const offset = parts[0].tag === 0xa0 ? 1 : 0;
  const serial = parts[offset];
  const issuerName = parts[offset + 2];
  if (serial?.tag !== 0x02 || issuerName?.tag !== 0x30 || signatureAlgorithm?.tag !== 0x30) throw new Error('not an X.509 certificate');
  const issuer = children(issuerName).flatMap((set) =>
    children(set).map((attribute) => {
      const [type, value] = children(attribute);
      return { shortName: SHORT_NAMES[oid(type.body)] ?? '', value: text(value) };
    }),
  );
  return { issuer, serialHex: serial.body.toString('hex'), signatureOid: oid(children(signatureAlgorithm)[0].body) };
}

function snOf(certificate: CertificateFields): string {
  const principal = [...certificate.issuer]
    .reverse()
    .map((a) => `${a.shortName}=${a.value}`)
    .join(',');
  const serial = BigInt(`0x${certificate.serialHex || '0'}`).toString(10);
  return createHash('md5')
    .update(principal + serial, 'utf8')
    .digest('hex');
}

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g;

/** The DER of each certificate of a PEM text, in order. */
function derBlocks(pem: string): Buffer[] {
  return [...pem.matchAll(PEM_BLOCK)].map((m) => Buffer.from(m[1].replace(/\s+/g, ''), 'base64'));
}

const memo = new Map<string, string>();
function remembered(key: string, compute: () => string): string {
  let value = memo.get(key);
  if (value === undefined) {
    value = compute();
    if (memo.size >= 256) memo.clear();
    memo.set(key, value);
  }
  return value;
}

/** The SN of one certificate (the app's, or Alipay's): `app_cert_sn`, `alipay_cert_sn`. */
export function alipayCertSn(pem: string): string {
  return remembered(`cert:${pem}`, () => {
    const [der] = derBlocks(pem);
    if (!der) throw new Error('no certificate');
    return snOf(fields(der));
  });
}

/** `alipay_root_cert_sn`: the SNs of the chain's RSA-signed certificates, joined by `_`; throws when it has none. */
export function alipayRootCertSn(pem: string): string {
  return remembered(`root:${pem}`, () => {
    const sns = derBlocks(pem)
      .map(fields)
      .filter((certificate) => certificate.signatureOid.startsWith(RSA_SIGNATURES))
      .map(snOf);
    if (sns.length === 0) throw new Error('no RSA certificate in the root chain');
    return sns.join('_');
  });
}

/** The public key of Alipay's certificate, which verifies what Alipay signs in certificate mode. */
export function alipayCertPublicKey(pem: string): string {
  return remembered(`key:${pem}`, () => new X509Certificate(pem).publicKey.export({ format: 'pem', type: 'spki' }).toString());
}
