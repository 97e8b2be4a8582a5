import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** A sealed value names the key that sealed it: `v2:{key id}:{iv}:{tag}:{ciphertext}`. */
const VERSION = 'v2';
/** Sealed before keys had ids; opened by trying each key of the ring. */
const LEGACY_VERSION = 'v1';

/** Raised when no key of the ring opens a value: the wrong MASTER_KEY, or a key that was dropped too early. */
export class SecretBoxKeyError extends Error {}

/** A key's public name: the first 8 characters of its SHA-256, safe to store and to print. */
export function masterKeyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('base64url').slice(0, 8);
}

/**
 * AES-256-GCM for secrets the service must be able to read back (api secrets, channel configs,
 * payee accounts). A keyring: the first key seals, every key opens what it sealed, so a key can
 * be rotated (MASTER_KEYS=new,old, then `keys:reseal`, then the old one dropped).
 */
export class SecretBox {
  private readonly keys: { id: string; key: Buffer }[];

  constructor(keys: Buffer | readonly Buffer[]) {
    const ring = Buffer.isBuffer(keys) ? [keys] : [...keys];
    if (ring.length === 0 || ring.some((key) => key.length !== 32)) throw new Error('SecretBox needs 32-byte keys');
    this.keys = ring.map((key) => ({ id: masterKeyId(key), key }));
  }

  /** The id of the key that seals. */
  get currentKeyId(): string {
    return this.keys[0].id;
  }

  seal(plaintext: string, context: string): string {
    const { id, key } = this.keys[0];
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    // The context (for example "merchant:12") binds a ciphertext to its row: one cannot be copied onto another.
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, id, iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
  }

  open(sealed: string, context: string): string {
    const parts = sealed.split(':');
    if (parts[0] === VERSION && parts.length === 5) {
      const key = this.keys.find((k) => k.id === parts[1]);
      if (!key) throw new SecretBoxKeyError(`sealed under key ${parts[1]}, which is not in the master key ring`);
      return openWith(key.key, parts.slice(2), context);
    }
    if (parts[0] === LEGACY_VERSION && parts.length === 4) {
      for (const { key } of this.keys) {
        try {
          return openWith(key, parts.slice(1), context);
        } catch {
          // the next key of the ring may have sealed it
        }
      }
      throw new SecretBoxKeyError('no key of the master key ring opens this value');
    }
    throw new Error('Unrecognised sealed secret');
  }

  /** True when a value is not sealed under the current key: `keys:reseal` seals it again. */
  isStale(sealed: string): boolean {
    const parts = sealed.split(':');
    return !(parts[0] === VERSION && parts[1] === this.currentKeyId);
  }
}

function openWith(key: Buffer, [iv, tag, body]: string[], context: string): string {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretBoxKeyError('the master key does not open this value');
  }
}

/** The AAD of a merchant's current api_secret: the ciphertext opens only on that merchant's row. */
export function merchantSecretContext(apiKey: string): string {
  return `merchant:${apiKey}`;
}

/** The AAD of the secret before the last rotation: never opens as the current one (api keys hold no colon). */
export function previousMerchantSecretContext(apiKey: string): string {
  return `merchant:${apiKey}:previous`;
}

/** The AAD of the check value that tells at start whether the configured key is this database's. */
export const KEY_CHECK_CONTEXT = 'key-check';
