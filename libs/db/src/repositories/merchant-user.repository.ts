import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { MerchantStatus } from '../entities';
import { tokenHash } from '../token-hash';

export type MerchantUserStatus = 'active' | 'disabled';

/** A portal user as sign-in needs it: who, for which merchant, and whether either is disabled. */
export interface MerchantUser {
  id: number;
  merchantId: number;
  email: string;
  passwordHash: string;
  status: MerchantUserStatus;
  merchantStatus: MerchantStatus;
}

export interface PendingInvitation {
  merchantId: number;
  email: string;
  expiresAt: Date;
  /** The email is a user already: accepting resets its password (SPEC 8a). */
  passwordReset: boolean;
}

export type AcceptResult = { kind: 'accepted'; userId: number } | { kind: 'invalid' } | { kind: 'email_taken' };

export interface DisableResult {
  userFound: boolean;
  sessionsEnded: number;
  invitationsRevoked: number;
}

const USER_COLUMNS = `u.id, u.merchant_id AS "merchantId", u.email, u.password_hash AS "passwordHash", u.status, m.status AS "merchantStatus"`;

/** merchant_users and their invitations (SPEC 8a). Emails match case-insensitively; tokens are stored hashed. */
@Injectable()
export class MerchantUserRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async findByEmail(email: string): Promise<MerchantUser | null> {
    const rows: MerchantUser[] = await this.dataSource.query(
      `SELECT ${USER_COLUMNS} FROM merchant_users u JOIN merchants m ON m.id = u.merchant_id WHERE lower(u.email) = lower($1)`,
      [email],
    );
    return rows[0] ?? null;
  }

  async findById(id: number): Promise<MerchantUser | null> {
    const rows: MerchantUser[] = await this.dataSource.query(
      `SELECT ${USER_COLUMNS} FROM merchant_users u JOIN merchants m ON m.id = u.merchant_id WHERE u.id = $1`,
      [id],
    );
    return rows[0] ?? null;
  }

  /**
   * A new invitation for `email` to the merchant; any earlier unused invitation for that email
   * stops working, so only the latest link is live. Returns its expiry.
   */
  async createInvitation(merchantId: number, email: string, token: string, ttlSeconds: number): Promise<Date> {
    return this.dataSource.transaction(async (em) => {
      await em.query(`UPDATE merchant_user_invitations SET expires_at = now() WHERE lower(email) = lower($1) AND used_at IS NULL AND expires_at > now()`, [
        email,
      ]);
      const rows: { expires_at: Date }[] = await em.query(
        `INSERT INTO merchant_user_invitations (merchant_id, email, token_hash, expires_at)
         VALUES ($1, $2, $3, now() + make_interval(secs => $4)) RETURNING expires_at`,
        [merchantId, email, tokenHash(token), ttlSeconds],
      );
      return rows[0].expires_at;
    });
  }

  async findPendingInvitation(token: string): Promise<PendingInvitation | null> {
    const rows: PendingInvitation[] = await this.dataSource.query(
      `SELECT i.merchant_id AS "merchantId", i.email, i.expires_at AS "expiresAt",
              EXISTS (SELECT 1 FROM merchant_users u WHERE lower(u.email) = lower(i.email)) AS "passwordReset"
         FROM merchant_user_invitations i
        WHERE i.token_hash = $1 AND i.used_at IS NULL AND i.expires_at > now()`,
      [tokenHash(token)],
    );
    return rows[0] ?? null;
  }

  /**
   * Uses the invitation (once: the conditional UPDATE lets one of two racing requests through)
   * and sets the password of its user, creating the user on first use. Accepting again for an
   * existing user resets the password, re-enables the user and ends every session it had.
   */
  async acceptInvitation(token: string, passwordHash: string): Promise<AcceptResult> {
    return this.dataSource.transaction(async (em) => {
      // An UPDATE through TypeORM answers [rows, affected count].
      const [used] = await em.query<[{ merchant_id: number; email: string }[], number]>(
        `UPDATE merchant_user_invitations SET used_at = now()
          WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now() RETURNING merchant_id, email`,
        [tokenHash(token)],
      );
      const invitation = used[0];
      if (!invitation) return { kind: 'invalid' };
      const users: { id: number }[] = await em.query(
        `INSERT INTO merchant_users (merchant_id, email, password_hash) VALUES ($1, $2, $3)
         ON CONFLICT (lower(email)) DO UPDATE
           SET password_hash = EXCLUDED.password_hash, status = 'active', password_changed_at = now(), updated_at = now()
         WHERE merchant_users.merchant_id = EXCLUDED.merchant_id
         RETURNING id`,
        [invitation.merchant_id, invitation.email, passwordHash],
      );
      const user = users[0];
      if (!user) {
        // The email now belongs to another merchant's user: leave the invitation unused, change nothing.
        await em.query(`UPDATE merchant_user_invitations SET used_at = NULL WHERE token_hash = $1`, [tokenHash(token)]);
        return { kind: 'email_taken' };
      }
      await em.query(`DELETE FROM portal_sessions WHERE user_id = $1`, [user.id]);
      return { kind: 'accepted', userId: user.id };
    });
  }

  async setPasswordHash(userId: number, passwordHash: string): Promise<void> {
    await this.dataSource.query(`UPDATE merchant_users SET password_hash = $2, password_changed_at = now(), updated_at = now() WHERE id = $1`, [
      userId,
      passwordHash,
    ]);
  }

  /** Disables the user, ends all its sessions and revokes its pending invitations, in one transaction. */
  async disableByEmail(email: string): Promise<DisableResult> {
    return this.dataSource.transaction(async (em) => {
      const [users] = await em.query<[{ id: number }[], number]>(
        `UPDATE merchant_users SET status = 'disabled', updated_at = now() WHERE lower(email) = lower($1) RETURNING id`,
        [email],
      );
      const [, sessionsEnded] = users[0] ? await em.query<[unknown[], number]>(`DELETE FROM portal_sessions WHERE user_id = $1`, [users[0].id]) : [[], 0];
      const [, invitationsRevoked] = await em.query<[unknown[], number]>(
        `UPDATE merchant_user_invitations SET expires_at = now() WHERE lower(email) = lower($1) AND used_at IS NULL AND expires_at > now()`,
        [email],
      );
      return { userFound: users.length > 0, sessionsEnded, invitationsRevoked };
    });
  }
}
