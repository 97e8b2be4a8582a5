import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { deliveryAddressSql } from './delivery-address';

/** One delivery of an order with every attempt, and where it goes (callbackQueryList, callback:list). */
export interface OrderDelivery {
  id: string;
  eventId: string;
  event: string;
  /** The address of its last attempt, else the one resolved when it was written. */
  url: string | null;
  status: 'pending' | 'succeeded' | 'failed' | 'no_address';
  createdAt: Date;
  attempts: { number: number; attemptedAt: Date; httpStatus: number | null; durationMs: number; error: string | null; responseExcerpt: string | null }[];
}

/** How often a merchant may use a callback tool: `max` uses per `windowSeconds`, shared by every API instance. */
export interface ToolAllowance {
  tool: 'recover' | 'test';
  max: number;
  windowSeconds: number;
}

export type AllowanceResult = { allowed: true } | { allowed: false; retryAfterMs: number };

export type RecoverResult = { kind: 'queued'; deliveryIds: string[] } | { kind: 'limited'; retryAfterMs: number };

/**
 * The merchant's callback tools (SPEC 7): an order's deliveries with their attempts, recovery of
 * failed deliveries, and the per-merchant allowances of those tools, kept in PostgreSQL like the
 * resend limit so every API instance (and the embedded mode) shares them.
 */
@Injectable()
export class CallbackToolsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The merchant's order's deliveries, newest first; null when the merchant has no such order. */
  async deliveriesOfOrder(merchantId: number, orderNo: string): Promise<OrderDelivery[] | null> {
    const [order]: { id: string }[] = await this.dataSource.query(`SELECT id FROM orders WHERE merchant_id = $1 AND order_no = $2`, [merchantId, orderNo]);
    return order ? this.deliveriesOfOrderId(order.id) : null;
  }

  /** For the operator, who sees every merchant: the order's merchant and deliveries, null for no such order. */
  async deliveriesOfAnyOrder(orderNo: string): Promise<{ merchantId: number; deliveries: OrderDelivery[] } | null> {
    const [order]: { id: string; merchant_id: number }[] = await this.dataSource.query(`SELECT id, merchant_id FROM orders WHERE order_no = $1`, [orderNo]);
    return order ? { merchantId: order.merchant_id, deliveries: await this.deliveriesOfOrderId(order.id) } : null;
  }

  private async deliveriesOfOrderId(orderId: string): Promise<OrderDelivery[]> {
    const rows: OrderDelivery[] = await this.dataSource.query(
      `SELECT d.id, d.event_id AS "eventId", e.type AS "event", d.status, d.created_at AS "createdAt",
              COALESCE((SELECT a.url FROM callback_attempts a WHERE a.delivery_id = d.id AND a.url IS NOT NULL ORDER BY a.number DESC LIMIT 1), d.notify_url) AS "url",
              COALESCE((SELECT json_agg(json_build_object('number', a.number, 'attemptedAt', a.attempted_at, 'httpStatus', a.http_status,
                                         'durationMs', a.duration_ms, 'error', a.error, 'responseExcerpt', a.response_excerpt) ORDER BY a.number)
                          FROM callback_attempts a WHERE a.delivery_id = d.id), '[]') AS "attempts"
         FROM callback_deliveries d
         JOIN order_events e ON e.id = d.event_id
        WHERE d.order_id = $1
        ORDER BY d.created_at DESC, d.event_seq DESC, d.id DESC`,
      [orderId],
    );
    // json_agg carries times as text.
    return rows.map((d) => ({ ...d, attempts: d.attempts.map((a) => ({ ...a, attemptedAt: new Date(a.attemptedAt) })) }));
  }

  /** Takes one use of the merchant's allowance of a tool (a fixed window), atomically across instances. */
  takeAllowance(merchantId: number, allowance: ToolAllowance): Promise<AllowanceResult> {
    return this.take(this.dataSource.manager, merchantId, allowance);
  }

  /**
   * callbackRecover: within the allowance, a new delivery (origin 'recover', due now) for every
   * event of the merchant whose delivery failed, or had no address (`no_address`, once there is
   * one), between `from` and `to` (when it failed or was written), unless
   * that event has a pending delivery already or one that succeeded. One transaction; the orders
   * are locked as callbackResend locks its one, so the two never both queue an event.
   */
  async recoverFailed(merchantId: number, from: Date, to: Date, allowance: ToolAllowance | null): Promise<RecoverResult> {
    return this.dataSource.transaction(async (em) => {
      if (allowance) {
        const taken = await this.take(em, merchantId, allowance);
        if (!taken.allowed) return { kind: 'limited', retryAfterMs: taken.retryAfterMs };
      }
      await em.query(
        `SELECT id FROM orders WHERE id IN (
           SELECT order_id FROM callback_deliveries WHERE merchant_id = $1 AND status IN ('failed', 'no_address') AND updated_at BETWEEN $2 AND $3)
         ORDER BY id FOR NO KEY UPDATE`,
        [merchantId, from, to],
      );
      const rows: { id: string }[] = await em.query(
        `WITH failed AS (
           SELECT DISTINCT event_id, order_id FROM callback_deliveries
            WHERE merchant_id = $1 AND status IN ('failed', 'no_address') AND updated_at BETWEEN $2 AND $3),
         due AS MATERIALIZED (
           SELECT f.event_id, f.order_id, e.refund_id, e.seq
             FROM failed f JOIN order_events e ON e.id = f.event_id
            WHERE NOT EXISTS (SELECT 1 FROM callback_deliveries o WHERE o.event_id = f.event_id AND o.status IN ('pending', 'succeeded'))
              -- SPEC 7 Address: an event that never had an address is sent once there is one; until then nothing is queued for it.
              AND ${deliveryAddressSql('e')} IS NOT NULL)
         SELECT d.delivery_id AS id FROM due CROSS JOIN LATERAL add_callback_delivery(gen_random_uuid(), due.event_id, due.order_id, $1, due.refund_id, due.seq, 'recover') d`,
        [merchantId, from, to],
      );
      return { kind: 'queued', deliveryIds: rows.map((r) => r.id) };
    });
  }

  private async take(em: EntityManager, merchantId: number, { tool, max, windowSeconds }: ToolAllowance): Promise<AllowanceResult> {
    const taken: unknown[] = await em.query(
      `WITH u AS (
         INSERT INTO callback_tool_allowances AS a (merchant_id, tool, window_started_at, used) VALUES ($1, $2, now(), 1)
         ON CONFLICT (merchant_id, tool) DO UPDATE
            SET window_started_at = CASE WHEN a.window_started_at <= now() - make_interval(secs => $3) THEN now() ELSE a.window_started_at END,
                used = CASE WHEN a.window_started_at <= now() - make_interval(secs => $3) THEN 1 ELSE a.used + 1 END
          WHERE a.window_started_at <= now() - make_interval(secs => $3) OR a.used < $4
         RETURNING used)
       SELECT used FROM u`,
      [merchantId, tool, windowSeconds, max],
    );
    if (taken.length > 0) return { allowed: true };
    const [left]: { retry_after_ms: number }[] = await em.query(
      `SELECT greatest(1, ceil(extract(epoch FROM window_started_at + make_interval(secs => $3) - now()) * 1000))::int AS retry_after_ms
         FROM callback_tool_allowances WHERE merchant_id = $1 AND tool = $2`,
      [merchantId, tool, windowSeconds],
    );
    return { allowed: false, retryAfterMs: left?.retry_after_ms ?? windowSeconds * 1000 };
  }
}
