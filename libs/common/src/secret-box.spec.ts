import { randomBytes } from 'node:crypto';
import { SecretBox } from './secret-box';

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  it('round-trips and never stores the plaintext', () => {
    const sealed = box.seal('sk_live_very_secret', 'merchant:1');
    expect(sealed).not.toContain('sk_live_very_secret');
    expect(box.open(sealed, 'merchant:1')).toBe('sk_live_very_secret');
  });

  it('uses a fresh IV every time', () => {
    expect(box.seal('same', 'c')).not.toBe(box.seal('same', 'c'));
  });

  it('refuses another context, another key and a tampered ciphertext', () => {
    const sealed = box.seal('secret', 'merchant:1');
    expect(() => box.open(sealed, 'merchant:2')).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'merchant:1')).toThrow();
    const parts = sealed.split(':');
    const body = Buffer.from(parts[3], 'base64');
    body[0] ^= 1;
    parts[3] = body.toString('base64');
    expect(() => box.open(parts.join(':'), 'merchant:1')).toThrow();
  });
});
