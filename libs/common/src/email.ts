/** A portal sign-in name: one @, no spaces, a dotted domain, at most 254 characters (RFC 5321's path limit). */
const EMAIL = /^[^\s@]{1,64}@[^\s@.]+(?:\.[^\s@.]+)+$/;

export const EMAIL_MAX_LENGTH = 254;

export function isEmailAddress(value: unknown): value is string {
  return typeof value === 'string' && value.length <= EMAIL_MAX_LENGTH && EMAIL.test(value);
}
