import { hashPassword, passwordProblem, verifyPassword } from './passwords';

describe('portal passwords', () => {
  it('are argon2id hashes that verify only the same password', async () => {
    const stored = await hashPassword('correct horse battery staple');
    expect(stored.startsWith('$argon2id$')).toBe(true);
    expect(await verifyPassword(stored, 'correct horse battery staple')).toBe(true);
    expect(await verifyPassword(stored, 'correct horse battery stapl')).toBe(false);
    expect(await verifyPassword('not a hash', 'x')).toBe(false);
  });

  it('are 12 to 256 characters, counted as characters not bytes', () => {
    expect(passwordProblem('a'.repeat(11), 'a'.repeat(11))).toBe('password.tooShort');
    expect(passwordProblem('密'.repeat(12), '密'.repeat(12))).toBeNull();
    expect(passwordProblem('a'.repeat(257), 'a'.repeat(257))).toBe('password.tooLong');
    expect(passwordProblem('a'.repeat(12), 'b'.repeat(12))).toBe('password.mismatch');
  });
});
