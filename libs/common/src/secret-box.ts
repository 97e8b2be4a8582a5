import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 'v1';

/**
 * AES-256-GCM for secrets the service must be able to read back (api secrets, channel
 * configs). Stored as `v1:iv:tag:ciphertext` in base64 so a future key rotation can tell
 * versions apart.
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error('SecretBox needs a 32-byte key');
    this.key = masterKey;
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    // The context (for example "merchant:12") binds a ciphertext to its row: one cannot be copied onto another.
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
  }

  open(sealed: string, context: string): string {
    const [version, iv, tag, body] = sealed.split(':');
    if (version !== VERSION || !iv || !tag || body === undefined) throw new Error('Unrecognised sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
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
