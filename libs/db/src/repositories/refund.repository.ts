import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { Refund } from '../entities';

/** A refund or payout as its claim returned it: the token says whose lease it is. */
export type Leased<T> = T & { leaseToken: string };

export type NewRefund = Omit<
  Refund,
  'id' | 'status' | 'channelRefundNo' | 'failure' | 'channelRequestedAt' | 'leaseUntil' | 'leaseToken' | 'attemptedAt' | 'updatedAt'
>;

@Injectable()
export class RefundRepository {
  constructor(@InjectRepository(Refund) private readonly refunds: Repository<Refund>) {}

  /** Inserts a processing refund; a unique violation (refund_no, merchant_refund_no, one in progress per order) is thrown to the caller. */
  async insert(em: EntityManager, values: NewRefund): Promise<Refund> {
    const refund: Omit<Refund, 'id'> = {
      ...values,
      status: 'processing',
      channelRefundNo: null,
      failure: null,
      channelRequestedAt: null,
      leaseUntil: null,
      leaseToken: null,
      attemptedAt: null,
      updatedAt: values.createdAt,
    };
    const saved = await em.getRepository(Refund).insert(refund);
    return { ...refund, id: String(saved.identifiers[0].id) };
  }

  findByRefundNo(merchantId: number, refundNo: string): Promise<Refund | null> {
    return this.refunds.findOneBy({ merchantId, refundNo });
  }

  findByMerchantRefundNo(merchantId: number, merchantRefundNo: string, em: EntityManager = this.refunds.manager): Promise<Refund | null> {
    return em.findOneBy(Refund, { merchantId, merchantRefundNo });
  }

  /** For the worker's jobs, which carry refund ids only. */
  findById(id: string): Promise<Refund | null> {
    return this.refunds.findOneBy({ id });
  }

  /** The order's refunds, newest first, when the order is this merchant's. */
  listForOrder(merchantId: number, orderId: string): Promise<Refund[]> {
    return this.refunds.find({ where: { merchantId, orderId }, order: { createdAt: 'DESC', id: 'DESC' } });
  }

  /** What the order's refunds take from it: every refund that has not failed. */
  async committedFen(em: EntityManager, orderId: string): Promise<number> {
    const [row] = await em.query<{ total: string }[]>(
      `SELECT COALESCE(sum("refund_fen"), 0)::text AS "total" FROM "refunds" WHERE "order_id" = $1 AND "status" <> 'failed'`,
      [orderId],
    );
    return Number(row.total);
  }

  async hasProcessing(em: EntityManager, orderId: string): Promise<boolean> {
    const rows = await em.query<unknown[]>(`SELECT 1 FROM "refunds" WHERE "order_id" = $1 AND "status" = 'processing' LIMIT 1`, [orderId]);
    return rows.length > 0;
  }

  /**
   * Takes the refund for one round of talk with the channel, for `leaseMs`: null when it is not
   * processing any more, or another worker holds it.
   */
  async claim(id: string, leaseMs: number): Promise<Leased<Refund> | null> {
    const [rows] = await this.refunds.query<[{ lease_token: string }[], number]>(
      `UPDATE "refunds" SET "lease_until" = now() + $2 * interval '1 millisecond', "lease_token" = gen_random_uuid(), "attempted_at" = now()
        WHERE "id" = $1 AND "status" = 'processing' AND ("lease_until" IS NULL OR "lease_until" < now()) RETURNING "lease_token"`,
      [id, leaseMs],
    );
    return rows.length === 0 ? null : { ...(await this.refunds.findOneByOrFail({ id })), leaseToken: rows[0].lease_token };
  }

  /** Written before the channel is first asked, so an unknown outcome is queried, never asked blindly again. */
  async markRequested(id: string): Promise<void> {
    await this.refunds.query(`UPDATE "refunds" SET "channel_requested_at" = COALESCE("channel_requested_at", now()) WHERE "id" = $1`, [id]);
  }

  /** The channel took the refund and numbered it: from now on it is only queried. */
  async markAccepted(id: string, channelRefundNo: string): Promise<void> {
    await this.refunds.query(`UPDATE "refunds" SET "channel_refund_no" = $2 WHERE "id" = $1 AND "status" = 'processing'`, [id, channelRefundNo]);
  }

  /** Ends the lease `claimed` took, unless it ran out and another worker claimed the refund since. */
  async release(claimed: Leased<Refund>): Promise<void> {
    await this.refunds.query(`UPDATE "refunds" SET "lease_until" = NULL, "lease_token" = NULL WHERE "id" = $1 AND "lease_token" = $2`, [
      claimed.id,
      claimed.leaseToken,
    ]);
  }

  /** Processing refunds nobody has worked on for `olderThanSeconds`: their job may be lost. */
  async findStuckIds(olderThanSeconds: number, limit: number): Promise<string[]> {
    const rows = await this.refunds.query<{ id: string }[]>(
      `SELECT "id" FROM "refunds"
        WHERE "status" = 'processing' AND COALESCE("attempted_at", "created_at") <= now() - make_interval(secs => $1)
          AND ("lease_until" IS NULL OR "lease_until" < now())
        ORDER BY "created_at" LIMIT $2`,
      [olderThanSeconds, limit],
    );
    return rows.map((r) => String(r.id));
  }
}
