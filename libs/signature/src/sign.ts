import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalString } from './canonical';

/** Lowercase hex of HMAC-SHA256(api_secret, canonical string). */
export function sign(params: Record<string, unknown>, secret: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(canonicalString(params), 'utf8').digest('hex');
}

const HEX_SHA256 = /^[0-9a-fA-F]{64}$/;

/** Constant-time, case-insensitive check of `signature` against the parameters. */
export function verify(params: Record<string, unknown>, signature: string, secret: string): boolean {
  if (!HEX_SHA256.test(signature)) return false;
  const expected = Buffer.from(sign(params, secret), 'hex');
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}
