import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { MerchantMode, MerchantStatus } from '../entities';
import { tokenHash } from '../token-hash';
import type { MerchantUserStatus } from './merchant-user.repository';

/** A live session with what every portal request checks: the user's and the merchant's status. */
export interface PortalSessionRow {
  userId: number;
  email: string;
  userStatus: MerchantUserStatus;
  merchantId: number;
  merchantName: string;
  merchantStatus: MerchantStatus;
  merchantMode: MerchantMode;
  lastSeenAt: Date;
}

/** Server-side portal sessions, keyed by the SHA-256 of the id the cookie carries. */
@Injectable()
export class PortalSessionRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async create(userId: number, sessionId: string, idleSeconds: number): Promise<void> {
    await this.dataSource.query(`INSERT INTO portal_sessions (id_hash, user_id, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))`, [
      tokenHash(sessionId),
      userId,
      idleSeconds,
    ]);
  }

  /** The session when it exists, has not idled out and began less than `maxAgeSeconds` ago; null otherwise. */
  async findLive(sessionId: string, maxAgeSeconds: number): Promise<PortalSessionRow | null> {
    const rows: PortalSessionRow[] = await this.dataSource.query(
      `SELECT u.id AS "userId", u.email, u.status AS "userStatus", m.id AS "merchantId", m.name AS "merchantName",
              m.status AS "merchantStatus", m.mode AS "merchantMode", s.last_seen_at AS "lastSeenAt"
         FROM portal_sessions s JOIN merchant_users u ON u.id = s.user_id JOIN merchants m ON m.id = u.merchant_id
        WHERE s.id_hash = $1 AND s.expires_at > now() AND s.created_at > now() - make_interval(secs => $2)`,
      [tokenHash(sessionId), maxAgeSeconds],
    );
    return rows[0] ?? null;
  }

  /** Pushes the idle expiry out again. */
  async touch(sessionId: string, idleSeconds: number): Promise<void> {
    await this.dataSource.query(`UPDATE portal_sessions SET expires_at = now() + make_interval(secs => $2), last_seen_at = now() WHERE id_hash = $1`, [
      tokenHash(sessionId),
      idleSeconds,
    ]);
  }

  async delete(sessionId: string): Promise<void> {
    await this.dataSource.query(`DELETE FROM portal_sessions WHERE id_hash = $1`, [tokenHash(sessionId)]);
  }

  /** Ends every session of the user, but `keepSessionId` when given; returns how many ended. */
  async deleteAllOfUser(userId: number, keepSessionId?: string): Promise<number> {
    const [, count] = await this.dataSource.query<[unknown[], number]>(`DELETE FROM portal_sessions WHERE user_id = $1 AND id_hash <> $2`, [
      userId,
      keepSessionId ? tokenHash(keepSessionId) : '',
    ]);
    return count;
  }

  async deleteExpired(maxAgeSeconds: number): Promise<void> {
    await this.dataSource.query(`DELETE FROM portal_sessions WHERE expires_at <= now() OR created_at <= now() - make_interval(secs => $1)`, [maxAgeSeconds]);
  }
}
