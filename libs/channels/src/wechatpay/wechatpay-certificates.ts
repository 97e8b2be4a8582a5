import { X509Certificate, type KeyObject, createVerify } from 'node:crypto';
import { ChannelError } from '../channel-adapter';
import type { ChannelAnswer } from '../channel-http';
import { decryptResource, header, isObject, signedMessage, text } from './wechatpay-wire';

/**
 * WeChat Pay's platform certificates, for a merchant whose account has no platform public key
 * (SPEC 6 Key modes): `GET /v3/certificates`
 * (https://pay.weixin.qq.com/docs/merchant/apis/platform-certificate/api-v3-get-certificates/get.html)
 * lists them, each encrypted with the APIv3 key (AEAD_AES_256_GCM, associated data
 * `certificate`). WeChat publishes a new certificate before it signs with it, and a certificate
 * expires (`expire_time`): the list is fetched again before the soonest expiry and twice a day,
 * and at once when an answer or notification names a serial not held, at most once a minute for
 * unknown serials (a forged serial must not make us hammer WeChat). Kept per channel for the
 * process's life (ChannelAdapters holds one store per channel).
 */

/** How often the list is fetched again while nothing expires sooner. */
export const CERTIFICATES_REFRESH_MS = 12 * 3600_000;
/** A certificate about to expire has its successor fetched this long before. */
const BEFORE_EXPIRY_MS = 3600_000;
/** Unknown serials start a fetch at most this often. */
export const UNKNOWN_SERIAL_REFETCH_MS = 60_000;

interface Held {
  publicKey: KeyObject;
  expiresAt: number;
}

export class PlatformCertificates {
  private held = new Map<string, Held>();
  private refreshAt = 0;
  private lastUnknownFetch = -Infinity;
  private inFlight: Promise<void> | null = null;

  constructor(
    private readonly apiV3Key: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** The public key of a held, unexpired certificate. */
  key(serial: string | null): KeyObject | null {
    if (!serial) return null;
    const certificate = this.held.get(serial.toUpperCase());
    return certificate && certificate.expiresAt > this.now() ? certificate.publicKey : null;
  }

  /** The serials held, newest expiry first. */
  serials(): string[] {
    return [...this.held.entries()].sort((a, b) => b[1].expiresAt - a[1].expiresAt).map(([serial]) => serial);
  }

  /**
   * Fetches the list when it is due, or when `serial` is not held (rate-limited); `fetch` makes the
   * signed GET /v3/certificates. A failed fetch keeps what is held (a ChannelError is thrown only
   * when nothing is held at all: no answer can be verified then).
   */
  async ensure(serial: string | null, fetch: () => Promise<ChannelAnswer>): Promise<void> {
    const now = this.now();
    const unknown = serial !== null && this.key(serial) === null;
    const due = this.held.size === 0 || now >= this.refreshAt;
    if (!due && !(unknown && now - this.lastUnknownFetch >= UNKNOWN_SERIAL_REFETCH_MS)) return;
    if (!due) this.lastUnknownFetch = now;
    this.inFlight ??= this.refresh(fetch).finally(() => (this.inFlight = null));
    try {
      await this.inFlight;
    } catch (err) {
      if (this.held.size === 0) throw err;
    }
  }

  private async refresh(fetch: () => Promise<ChannelAnswer>): Promise<void> {
    const answer = await fetch();
    const what = 'wechatpay GET /v3/certificates';
    if (answer.status !== 200) throw new ChannelError(`${what} answered HTTP ${answer.status}`);
    let data: unknown;
    try {
      data = (JSON.parse(answer.body) as { data?: unknown }).data;
    } catch {
      data = null;
    }
    if (!Array.isArray(data)) throw new ChannelError(`${what} answered without data`);
    const fetched = new Map<string, Held>();
    for (const entry of data) {
      const certificate = this.decrypt(entry);
      if (certificate) fetched.set(certificate.serial, certificate.held);
    }
    // The list is signed by one of the certificates it carries: they are trusted because they
    // decrypt under the APIv3 key, and the signature shows the answer came whole from WeChat.
    const signerSerial = (header(answer.headers, 'wechatpay-serial') ?? '').toUpperCase();
    const signer = fetched.get(signerSerial) ?? this.held.get(signerSerial);
    if (!signer || !verifies(answer, signer.publicKey)) throw new ChannelError(`${what} answer signature does not verify`);
    const now = this.now();
    for (const [serial, held] of fetched) if (held.expiresAt <= now) fetched.delete(serial);
    if (fetched.size === 0) throw new ChannelError(`${what} answered no certificate in force`);
    this.held = fetched;
    const soonest = Math.min(...[...fetched.values()].map((h) => h.expiresAt));
    this.refreshAt = Math.min(now + CERTIFICATES_REFRESH_MS, Math.max(now + UNKNOWN_SERIAL_REFETCH_MS, soonest - BEFORE_EXPIRY_MS));
  }

  /** One entry of the list: its certificate decrypted, its serial checked against the certificate's own. */
  private decrypt(entry: unknown): { serial: string; held: Held } | null {
    if (!isObject(entry) || !isObject(entry.encrypt_certificate)) return null;
    const { ciphertext, nonce, associated_data: associatedData } = entry.encrypt_certificate;
    if (typeof ciphertext !== 'string' || typeof nonce !== 'string' || (associatedData !== undefined && typeof associatedData !== 'string')) return null;
    const pem = decryptResource({ ciphertext, nonce, associated_data: associatedData }, this.apiV3Key);
    const serial = text(entry.serial_no)?.toUpperCase();
    if (!pem || !serial) return null;
    try {
      const certificate = new X509Certificate(pem);
      if (certificate.serialNumber.toUpperCase() !== serial) return null;
      const expiresAt = Math.min(certificate.validToDate.getTime(), Date.parse(text(entry.expire_time) ?? '') || Infinity);
      return { serial, held: { publicKey: certificate.publicKey, expiresAt } };
    } catch {
      return null;
    }
  }
}

function verifies(answer: ChannelAnswer, key: KeyObject): boolean {
  const timestamp = header(answer.headers, 'wechatpay-timestamp');
  const nonce = header(answer.headers, 'wechatpay-nonce');
  const signature = header(answer.headers, 'wechatpay-signature');
  if (!timestamp || !nonce || !signature) return false;
  try {
    return createVerify('RSA-SHA256')
      .update(signedMessage(timestamp, nonce, answer.body), 'utf8')
      .verify(key, signature, 'base64');
  } catch {
    return false;
  }
}
