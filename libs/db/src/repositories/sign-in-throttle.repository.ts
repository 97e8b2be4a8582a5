import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';

export interface ThrottleRule {
  maxFailures: number;
  windowSeconds: number;
  lockSeconds: number;
}

/**
 * Failed portal sign-ins per email (known or not, so a lock never tells them apart), shared by
 * every API instance: `maxFailures` within `windowSeconds` lock the email for `lockSeconds`.
 */
@Injectable()
export class SignInThrottleRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Counts a sign-in attempt before its password is checked: the attempt is a failure until
   * the password proves right (then clearFailures). A row lock on the email's lock row makes
   * concurrent attempts count one after another, so at most `maxFailures` checks happen per
   * window however they arrive. Returns the attempt's number in the window, or null when the
   * email is locked or its window's checks are used up (the password must not be checked).
   */
  async countAttempt(email: string, rule: ThrottleRule): Promise<number | null> {
    return this.dataSource.transaction(async (em) => {
      // '-infinity' is "not locked"; the upsert holds the row's lock until this transaction ends.
      const [lock]: { locked: boolean }[] = await em.query(
        `INSERT INTO portal_sign_in_locks (email, locked_until) VALUES (lower($1), '-infinity')
         ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email RETURNING locked_until > now() AS locked`,
        [email],
      );
      if (lock.locked) return null;
      const [{ n }]: { n: number }[] = await em.query(
        `SELECT count(*)::int AS n FROM portal_sign_in_failures WHERE email = lower($1) AND failed_at > now() - make_interval(secs => $2)`,
        [email, rule.windowSeconds],
      );
      if (n >= rule.maxFailures) return null;
      await em.query(`INSERT INTO portal_sign_in_failures (email) VALUES (lower($1))`, [email]);
      return n + 1;
    });
  }

  /** The email's failures reached the limit: locked for `lockSeconds`, and the next failures count from zero once it ends. */
  async lock(email: string, rule: ThrottleRule): Promise<void> {
    await this.dataSource.transaction(async (em) => {
      await em.query(
        `INSERT INTO portal_sign_in_locks (email, locked_until) VALUES (lower($1), now() + make_interval(secs => $2))
         ON CONFLICT (email) DO UPDATE SET locked_until = EXCLUDED.locked_until`,
        [email, rule.lockSeconds],
      );
      await em.query(`DELETE FROM portal_sign_in_failures WHERE email = lower($1)`, [email]);
    });
  }

  async clearFailures(email: string): Promise<void> {
    await this.dataSource.query(`DELETE FROM portal_sign_in_failures WHERE email = lower($1)`, [email]);
  }

  /** Failures older than the window and ended locks count for nothing any more. */
  async deleteStale(windowSeconds: number): Promise<void> {
    await this.dataSource.query(`DELETE FROM portal_sign_in_failures WHERE failed_at <= now() - make_interval(secs => $1)`, [windowSeconds]);
    await this.dataSource.query(`DELETE FROM portal_sign_in_locks WHERE locked_until <= now()`);
  }
}
