import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { CALLBACK_EVENT_TYPES, type OrderEventType } from '../entities';

/** callbackResend's allowance: at most `max` resend deliveries per order within `windowSeconds`. */
export interface ResendLimit {
  max: number;
  windowSeconds: number;
}

export type ResendResult =
  /** Not this merchant's order, or it has no callback event yet. */
  | { kind: 'not_found' }
  /** A delivery of the latest event is still pending: it answers, nothing new is queued. */
  | { kind: 'pending'; eventId: string; event: OrderEventType; deliveryId: string }
  /** A new delivery of the latest event, due now: enqueue it. */
  | { kind: 'queued'; eventId: string; event: OrderEventType; deliveryId: string }
  | { kind: 'limited'; retryAfterMs: number };

/** A delivery with every attempt, as the merchant may see it (the portal's order page). */
export interface DeliveryWithAttempts {
  id: string;
  eventId: string;
  event: OrderEventType;
  status: 'pending' | 'succeeded' | 'failed' | 'no_address';
  createdAt: Date;
  attempts: {
    number: number;
    attemptedAt: Date;
    url: string | null;
    httpStatus: number | null;
    durationMs: number;
    error: string | null;
    responseExcerpt: string | null;
  }[];
}

/**
 * A merchant's deliveries as the portal and callbackResend see them: one order's deliveries with
 * their attempts, and a resend of its latest event (SPEC 7 callbackResend).
 */
@Injectable()
export class CallbackDeliveryRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The order's deliveries, newest first, each with its attempts in order, when the order is this merchant's. */
  async listForOrder(merchantId: number, orderId: string): Promise<DeliveryWithAttempts[]> {
    const rows: DeliveryWithAttempts[] = await this.dataSource.query(
      `SELECT d.id, d.event_id AS "eventId", e.type AS "event", d.status, d.created_at AS "createdAt",
              COALESCE((SELECT json_agg(json_build_object('number', a.number, 'attemptedAt', a.attempted_at, 'url', a.url,
                                         'httpStatus', a.http_status, 'durationMs', a.duration_ms, 'error', a.error,
                                         'responseExcerpt', a.response_excerpt) ORDER BY a.number)
                          FROM callback_attempts a WHERE a.delivery_id = d.id), '[]') AS "attempts"
         FROM callback_deliveries d JOIN order_events e ON e.id = d.event_id
        WHERE d.merchant_id = $1 AND d.order_id = $2
        ORDER BY d.created_at DESC, d.event_seq DESC, d.id DESC`,
      [merchantId, orderId],
    );
    // json_agg carries times as text.
    return rows.map((d) => ({ ...d, attempts: d.attempts.map((a) => ({ ...a, attemptedAt: new Date(a.attemptedAt) })) }));
  }
  /** callbackResend for the order of this delivery: an operator pressed retry on its failed job in Bull Board. */
  async resendOrderOf(deliveryId: string, limit: ResendLimit): Promise<ResendResult> {
    const [row]: { merchant_id: number; order_no: string }[] = await this.dataSource.query(
      `SELECT d.merchant_id, o.order_no FROM callback_deliveries d JOIN orders o ON o.id = d.order_id WHERE d.id = $1`,
      [deliveryId],
    );
    return row ? this.resendLatestEvent(row.merchant_id, row.order_no, limit) : { kind: 'not_found' };
  }
  /**
   * callbackResend (SPEC 7) in one transaction, serialised per order by a lock on the order row,
   * so concurrent resends make one delivery: the order's latest callback event; a pending
   * delivery of it when there is one (nothing new); else, within `limit`, a new delivery due now.
   */
  async resendLatestEvent(merchantId: number, orderNo: string, limit: ResendLimit): Promise<ResendResult> {
    return this.dataSource.transaction(async (em) => {
      const [order]: { id: string }[] = await em.query(`SELECT id FROM orders WHERE merchant_id = $1 AND order_no = $2 FOR NO KEY UPDATE`, [
        merchantId,
        orderNo,
      ]);
      if (!order) return { kind: 'not_found' };
      const [latest]: { id: string; type: OrderEventType }[] = await em.query(
        `SELECT id, type FROM order_events
          WHERE order_id = $1 AND type = ANY($2)
          ORDER BY created_at DESC, CASE type WHEN 'order.completed' THEN 2 WHEN 'order.paid' THEN 1 ELSE 0 END DESC
          LIMIT 1`,
        [order.id, CALLBACK_EVENT_TYPES],
      );
      if (!latest) return { kind: 'not_found' };
      const event = { eventId: latest.id, event: latest.type };
      const [pending]: { id: string }[] = await em.query(
        `SELECT id FROM callback_deliveries WHERE event_id = $1 AND status = 'pending' ORDER BY created_at DESC LIMIT 1`,
        [latest.id],
      );
      if (pending) return { kind: 'pending', ...event, deliveryId: pending.id };
      const [recent]: { count: number; retry_after_ms: number | null }[] = await em.query(
        `SELECT count(*)::int AS count,
                ceil(extract(epoch FROM min(created_at) + make_interval(secs => $2) - now()) * 1000)::int AS retry_after_ms
           FROM callback_deliveries
          WHERE order_id = $1 AND origin = 'resend' AND created_at > now() - make_interval(secs => $2)`,
        [order.id, limit.windowSeconds],
      );
      if (recent.count >= limit.max) return { kind: 'limited', retryAfterMs: recent.retry_after_ms ?? 1000 };
      const deliveryId = randomUUID();
      await em.query(
        `SELECT d.delivery_id FROM order_events e CROSS JOIN LATERAL add_callback_delivery($1, e.id, e.order_id, $3, e.refund_id, e.seq, 'resend') d WHERE e.id = $2`,
        [deliveryId, latest.id, merchantId],
      );
      return { kind: 'queued', ...event, deliveryId };
    });
  }
}
