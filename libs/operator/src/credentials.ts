import { randomBytes, randomInt } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `mk_` + 24 base62 characters (SPEC 3). */
export function newApiKey(): string {
  let key = 'mk_';
  for (let i = 0; i < 24; i++) key += BASE62[randomInt(62)];
  return key;
}

/** 32 random bytes as text. */
export function newApiSecret(): string {
  return `sk_${randomBytes(32).toString('base64url')}`;
}

/** A portal invitation's bearer token: 32 random bytes, URL-safe. */
export function newInvitationToken(): string {
  return randomBytes(32).toString('base64url');
}
