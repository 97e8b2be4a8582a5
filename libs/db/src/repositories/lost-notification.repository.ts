import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';

/** A pending top-up whose channel is to be asked whether it was paid after all. */
export interface DueQuery {
  id: string;
  orderNo: string;
  channelId: number;
  cnyFen: number;
  channelTradeNo: string | null;
  /** 1: about a minute after creation; 2: about five; 3: just before expiry. */
  checkpoint: number;
}

/** SPEC 6's checkpoints: 60 s and 300 s after creation, and 60 s before expiry. */
export const LOST_NOTIFICATION_CHECKPOINTS = { firstAfterSeconds: 60, secondAfterSeconds: 300, beforeExpirySeconds: 60 } as const;

/**
 * Claims pending top-ups on live channels (every adapter but the sandbox, which cannot lose a
 * notification) that reached a checkpoint not taken yet. The claim moves `channel_queries` in the
 * same statement, skipping rows another worker holds: each checkpoint is one query, whoever runs it.
 */
@Injectable()
export class LostNotificationRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async claimDue(limit: number): Promise<DueQuery[]> {
    const { firstAfterSeconds, secondAfterSeconds, beforeExpirySeconds } = LOST_NOTIFICATION_CHECKPOINTS;
    const [rows] = await this.dataSource.query<
      [{ id: string; order_no: string; channel_id: number; cny_fen: string; channel_trade_no: string | null; channel_queries: number }[], number]
    >(
      `UPDATE "orders" o SET "channel_queries" = due."checkpoint"
         FROM (SELECT p."id",
                      CASE WHEN p."expires_at" <= now() + make_interval(secs => $3) THEN 3
                           WHEN p."created_at" <= now() - make_interval(secs => $2) THEN 2
                           ELSE 1 END AS "checkpoint"
                 FROM "orders" p JOIN "channels" c ON c."id" = p."channel_id"
                WHERE p."status" = 'pending' AND p."order_type" = 1 AND c."adapter" <> 'sandbox'
                  AND p."created_at" <= now() - make_interval(secs => $1)
                  AND p."channel_queries" < CASE WHEN p."expires_at" <= now() + make_interval(secs => $3) THEN 3
                                                 WHEN p."created_at" <= now() - make_interval(secs => $2) THEN 2
                                                 ELSE 1 END
                ORDER BY p."created_at" LIMIT $4 FOR UPDATE OF p SKIP LOCKED) due
        WHERE o."id" = due."id" AND o."status" = 'pending'
        RETURNING o."id", o."order_no", o."channel_id", o."cny_fen", o."channel_trade_no", o."channel_queries"`,
      [firstAfterSeconds, secondAfterSeconds, beforeExpirySeconds, limit],
    );
    return rows.map((r) => ({
      id: r.id,
      orderNo: r.order_no,
      channelId: r.channel_id,
      cnyFen: Number(r.cny_fen),
      channelTradeNo: r.channel_trade_no,
      checkpoint: r.channel_queries,
    }));
  }
}
