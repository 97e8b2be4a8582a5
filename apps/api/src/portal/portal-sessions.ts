import { randomBytes } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppConfig } from '@app/common';
import { PortalSessionRepository, type PortalSessionRow, SignInThrottleRepository, tokenHash } from '@app/db';
import { SIGN_IN_THROTTLE } from './portal-auth.service';

export const SESSION_COOKIE = 'portal_session';
/** SPEC 8a: a session ends after 12 hours without a request. */
export const SESSION_IDLE_SECONDS = 12 * 3600;
/** SPEC 8a: and 7 days after sign-in whatever the activity, so a stolen session does not live on by being used. */
export const SESSION_MAX_SECONDS = 7 * 86400;
/** The idle expiry moves at most once a minute, so reading pages does not write a row each time. */
const TOUCH_AFTER_MS = 60_000;
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

export interface PortalSession extends PortalSessionRow {
  sessionId: string;
}

/**
 * Server-side sessions: an opaque 256-bit id in an HttpOnly, SameSite=Lax cookie (Secure under
 * an https PUBLIC_BASE_URL), the row keyed by its SHA-256. Every request re-reads the user, so a
 * disabled user's sessions end at once.
 */
@Injectable()
export class PortalSessions {
  private readonly logger = new Logger('PortalSessions');
  private readonly secure: boolean;
  private lastPrune = 0;

  constructor(
    config: AppConfig,
    private readonly sessions: PortalSessionRepository,
    private readonly throttle: SignInThrottleRepository,
  ) {
    this.secure = config.publicBaseUrl.startsWith('https:');
  }

  /** A new session for the user; the one the browser had (if any) ends, so sign-in always rotates the id. */
  async start(request: FastifyRequest, reply: FastifyReply, userId: number): Promise<PortalSession | null> {
    const previous = this.cookieValue(request);
    if (previous) await this.sessions.delete(previous);
    const sessionId = randomBytes(32).toString('base64url');
    await this.sessions.create(userId, sessionId, SESSION_IDLE_SECONDS);
    reply.setCookie(SESSION_COOKIE, sessionId, this.cookieOptions());
    const row = await this.sessions.findLive(sessionId, SESSION_MAX_SECONDS);
    return row ? { ...row, sessionId } : null;
  }

  /** The live session of the request, or null (no cookie, unknown, idled out, older than 7 days, or its user disabled). */
  async resolve(request: FastifyRequest, reply: FastifyReply): Promise<PortalSession | null> {
    this.pruneNow();
    const sessionId = this.cookieValue(request);
    if (!sessionId) return null;
    const row = await this.sessions.findLive(sessionId, SESSION_MAX_SECONDS);
    if (!row || row.userStatus !== 'active') {
      if (row) await this.sessions.delete(sessionId);
      reply.clearCookie(SESSION_COOKIE, this.cookieOptions());
      return null;
    }
    if (Date.now() - new Date(row.lastSeenAt).getTime() > TOUCH_AFTER_MS) await this.sessions.touch(sessionId, SESSION_IDLE_SECONDS);
    return { ...row, sessionId };
  }

  async end(reply: FastifyReply, session: PortalSession): Promise<void> {
    await this.sessions.delete(session.sessionId);
    reply.clearCookie(SESSION_COOKIE, this.cookieOptions());
  }

  /** Every session of the user but `keep`: after a password change, or sign out everywhere (no `keep`). */
  endAllOfUser(userId: number, keep?: PortalSession): Promise<number> {
    return this.sessions.deleteAllOfUser(userId, keep?.sessionId);
  }

  /** What CSRF tokens are bound to: the session, so a token from one session is refused in another (sign-in forms: none yet). */
  static csrfUserInfo(session: PortalSession | null): string {
    return session ? tokenHash(session.sessionId) : 'signed-out';
  }

  private cookieValue(request: FastifyRequest): string | null {
    const value = request.cookies?.[SESSION_COOKIE];
    return value && SESSION_ID.test(value) ? value : null;
  }

  private cookieOptions() {
    return { path: '/', httpOnly: true, sameSite: 'lax' as const, secure: this.secure };
  }

  /** Ended sessions and stale sign-in failures go at most once a minute, off the request's path. */
  private pruneNow(): void {
    if (Date.now() - this.lastPrune < 60_000) return;
    this.lastPrune = Date.now();
    Promise.all([this.sessions.deleteExpired(SESSION_MAX_SECONDS), this.throttle.deleteStale(SIGN_IN_THROTTLE.windowSeconds)]).catch((err: Error) =>
      this.logger.warn(`pruning portal sessions failed, the next prune retries: ${err.message}`),
    );
  }
}
