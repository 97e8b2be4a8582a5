import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { Payout } from '../entities';
import type { Leased } from './refund.repository';

export type NewPayout = Pick<Payout, 'orderId' | 'payeeName' | 'payeeAccountEnc' | 'payeeAccountMasked' | 'payeeBank'>;

/** A sell order's payee and its payout's talk with the channel. */
@Injectable()
export class PayoutRepository {
  constructor(@InjectRepository(Payout) private readonly payouts: Repository<Payout>) {}

  async insert(em: EntityManager, values: NewPayout): Promise<Payout> {
    const payout: Payout = {
      ...values,
      channelPayoutNo: null,
      failure: null,
      channelRequestedAt: null,
      leaseUntil: null,
      leaseToken: null,
      attemptedAt: new Date(),
      settledAt: null,
    };
    await em.getRepository(Payout).insert(payout);
    return payout;
  }

  /** The payee of the merchant's sell order. */
  async findForMerchant(merchantId: number, orderId: string): Promise<Payout | null> {
    const [row] = await this.payouts.query<{ order_id: string }[]>(
      `SELECT p."order_id" FROM "payouts" p JOIN "orders" o ON o."id" = p."order_id" WHERE o."merchant_id" = $1 AND p."order_id" = $2`,
      [merchantId, orderId],
    );
    return row ? this.payouts.findOneBy({ orderId: String(row.order_id) }) : null;
  }

  /** For the worker's jobs, which carry order ids only. */
  findByOrderId(orderId: string): Promise<Payout | null> {
    return this.payouts.findOneBy({ orderId });
  }

  /** Takes the payout for one round of talk with the channel, for `leaseMs`: null when it is settled, or another worker holds it. */
  async claim(orderId: string, leaseMs: number): Promise<Leased<Payout> | null> {
    const [rows] = await this.payouts.query<[{ lease_token: string }[], number]>(
      `UPDATE "payouts" SET "lease_until" = now() + $2 * interval '1 millisecond', "lease_token" = gen_random_uuid(), "attempted_at" = now()
        WHERE "order_id" = $1 AND "settled_at" IS NULL AND ("lease_until" IS NULL OR "lease_until" < now()) RETURNING "lease_token"`,
      [orderId, leaseMs],
    );
    return rows.length === 0 ? null : { ...(await this.payouts.findOneByOrFail({ orderId })), leaseToken: rows[0].lease_token };
  }

  /** Written before the channel is first asked, so an unknown outcome is queried, never asked blindly again. */
  async markRequested(orderId: string): Promise<void> {
    await this.payouts.query(`UPDATE "payouts" SET "channel_requested_at" = COALESCE("channel_requested_at", now()) WHERE "order_id" = $1`, [orderId]);
  }

  /** The channel took the payout and numbered it: from now on it is only queried. */
  async markAccepted(orderId: string, channelPayoutNo: string): Promise<void> {
    await this.payouts.query(`UPDATE "payouts" SET "channel_payout_no" = $2 WHERE "order_id" = $1 AND "settled_at" IS NULL`, [orderId, channelPayoutNo]);
  }

  /** The sell order reached completed or cancelled: written in that transition's transaction. */
  async settle(em: EntityManager, orderId: string, failure: string | null = null): Promise<void> {
    await em.query(`UPDATE "payouts" SET "settled_at" = now(), "lease_until" = NULL, "failure" = $2 WHERE "order_id" = $1`, [
      orderId,
      failure?.slice(0, 256) ?? null,
    ]);
  }

  /** Ends the lease `claimed` took, unless it ran out and another worker claimed the payout since. */
  async release(claimed: Leased<Payout>): Promise<void> {
    await this.payouts.query(`UPDATE "payouts" SET "lease_until" = NULL, "lease_token" = NULL WHERE "order_id" = $1 AND "lease_token" = $2`, [
      claimed.orderId,
      claimed.leaseToken,
    ]);
  }

  /** Open payouts nobody has worked on for `olderThanSeconds`: their job may be lost. */
  async findStuckOrderIds(olderThanSeconds: number, limit: number): Promise<string[]> {
    const rows = await this.payouts.query<{ order_id: string }[]>(
      `SELECT "order_id" FROM "payouts"
        WHERE "settled_at" IS NULL AND "attempted_at" <= now() - make_interval(secs => $1) AND ("lease_until" IS NULL OR "lease_until" < now())
        ORDER BY "attempted_at" LIMIT $2`,
      [olderThanSeconds, limit],
    );
    return rows.map((r) => String(r.order_id));
  }
}
