import { randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';
import { ConcurrencyLimit } from './concurrency-limit';

export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 256;

export type PasswordProblem = 'password.tooShort' | 'password.tooLong' | 'password.mismatch';

/** What is wrong with a new password, in characters (not bytes), or null. */
export function passwordProblem(password: string, repeated: string): PasswordProblem | null {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH) return 'password.tooShort';
  if (length > PASSWORD_MAX_LENGTH) return 'password.tooLong';
  return password === repeated ? null : 'password.mismatch';
}

/**
 * SPEC 8a: password checks run a few at a time per process, whoever sends them; a flood of
 * sign-ins waits its turn instead of taking every core (and libuv's threads) from the API.
 */
export const PASSWORD_CHECKS = new ConcurrencyLimit(2);

/** argon2id (the binding's default) with its default cost, OWASP's minimum: 19 MiB, 2 passes, 1 lane. */
export function hashPassword(password: string): Promise<string> {
  return PASSWORD_CHECKS.run(() => hash(password));
}

/** False for a wrong password and for a stored hash the binding cannot read. */
export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  // A password longer than any we accept cannot match; refusing it early keeps hashing bounded.
  if ([...password].length > PASSWORD_MAX_LENGTH) return false;
  try {
    return await PASSWORD_CHECKS.run(() => verify(stored, password));
  } catch {
    return false;
  }
}

let dummyHash: Promise<string> | null = null;

/** The same work as checking a real password, for an email nobody has: answers take as long either way. */
export async function verifyAgainstDummy(password: string): Promise<void> {
  dummyHash ??= hashPassword(randomBytes(24).toString('base64'));
  await verifyPassword(await dummyHash, password);
}
