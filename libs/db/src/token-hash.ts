import { createHash } from 'node:crypto';

/** What the database keeps of a bearer token (invitation, session id): its SHA-256, never the token. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
