import { createCipheriv, randomBytes } from 'node:crypto';
import { SecretBox, SecretBoxKeyError, masterKeyId } from './secret-box';

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
    expect(() => box.open(sealed, 'merchant:2')).toThrow(SecretBoxKeyError);
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'merchant:1')).toThrow(SecretBoxKeyError);
    const parts = sealed.split(':');
    const body = Buffer.from(parts[4], 'base64');
    body[0] ^= 1;
    parts[4] = body.toString('base64');
    expect(() => box.open(parts.join(':'), 'merchant:1')).toThrow(SecretBoxKeyError);
  });
});

describe('SecretBox as a key ring', () => {
  const oldKey = randomBytes(32);
  const newKey = randomBytes(32);

  it('seals with the first key and opens what any key of the ring sealed', () => {
    const sealedOld = new SecretBox(oldKey).seal('secret', 'c');
    const ring = new SecretBox([newKey, oldKey]);
    expect(ring.open(sealedOld, 'c')).toBe('secret');
    const sealedNew = ring.seal('secret', 'c');
    expect(sealedNew.split(':')[1]).toBe(masterKeyId(newKey));
    expect(new SecretBox(newKey).open(sealedNew, 'c')).toBe('secret');
    expect(() => new SecretBox(oldKey).open(sealedNew, 'c')).toThrow(/not in the master key ring/);
  });

  it('tells which values are not under the current key', () => {
    const ring = new SecretBox([newKey, oldKey]);
    expect(ring.isStale(new SecretBox(oldKey).seal('x', 'c'))).toBe(true);
    expect(ring.isStale(ring.seal('x', 'c'))).toBe(false);
  });

  it('opens values sealed before keys had ids (v1) with whichever key sealed them', () => {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', oldKey, iv).setAAD(Buffer.from('c'));
    const body = Buffer.concat([cipher.update('legacy', 'utf8'), cipher.final()]);
    const v1 = ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
    const ring = new SecretBox([newKey, oldKey]);
    expect(ring.open(v1, 'c')).toBe('legacy');
    expect(ring.isStale(v1)).toBe(true);
    expect(() => new SecretBox(newKey).open(v1, 'c')).toThrow(SecretBoxKeyError);
  });
});
