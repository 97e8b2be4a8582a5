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

  async isLocked(email: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(`SELECT 1 FROM portal_sign_in_locks WHERE email = lower($1) AND locked_until > now()`, [email]);
    return rows.length > 0;
  }

  /** Records one failure; returns true when this failure locked the email. */
  async recordFailure(email: string, rule: ThrottleRule): Promise<boolean> {
    return this.dataSource.transaction(async (em) => {
      await em.query(`INSERT INTO portal_sign_in_failures (email) VALUES (lower($1))`, [email]);
      const rows: { n: number }[] = await em.query(
        `SELECT count(*)::int AS n FROM portal_sign_in_failures WHERE email = lower($1) AND failed_at > now() - make_interval(secs => $2)`,
        [email, rule.windowSeconds],
      );
      if (rows[0].n < rule.maxFailures) return false;
      await em.query(
        `INSERT INTO portal_sign_in_locks (email, locked_until) VALUES (lower($1), now() + make_interval(secs => $2))
         ON CONFLICT (email) DO UPDATE SET locked_until = EXCLUDED.locked_until`,
        [email, rule.lockSeconds],
      );
      // The lock starts a fresh count: once it ends, the next failures count from zero.
      await em.query(`DELETE FROM portal_sign_in_failures WHERE email = lower($1)`, [email]);
      return true;
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
