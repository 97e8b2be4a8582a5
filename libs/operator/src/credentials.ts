import { randomBytes, randomInt } from 'node:crypto';
import type { MerchantMode } from '@app/db';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `mk_live_` or `mk_test_` + 24 base62 characters (SPEC 3, 5): the key says which money it moves. */
export function newApiKey(mode: MerchantMode): string {
  let key = `mk_${mode}_`;
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
