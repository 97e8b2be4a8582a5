import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { CALLBACK_EVENT_TYPES, type OrderEventType } from '../entities';

/** What the worker needs for one attempt, read in the statement that claims it. */
export interface ClaimedAttempt {
  deliveryId: string;
  /** 1 for the first attempt of this delivery. */
  number: number;
  eventId: string;
  eventType: OrderEventType;
  payload: Record<string, unknown>;
  /** A refund event's refund notify_url, else the order's, else the merchant's (SPEC 7). */
  notifyUrl: string | null;
  merchantApiKey: string;
  merchantSecretEnc: string;
  /** The secret before the last rotation while its grace lasts (SPEC 3), else null. */
  merchantPreviousSecretEnc: string | null;
}

export type ClaimResult =
  | { kind: 'claimed'; attempt: ClaimedAttempt }
  /** Not pending any more (succeeded, failed) or unknown: nothing to do. */
  | { kind: 'settled' }
  /** Pending but every attempt was used (a shorter schedule, or lost recordings): now marked failed. */
  | { kind: 'exhausted' };

export interface AttemptRecord {
  url: string | null;
  httpStatus: number | null;
  durationMs: number;
  responseExcerpt: string | null;
  error: string | null;
}

export interface DeliveryUpdate {
  status: 'pending' | 'succeeded' | 'failed';
  lastError: string | null;
  /** For a pending delivery: when the next attempt is due (the sweeper's deadline). */
  nextAttemptAt: Date | null;
}

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

export interface DueDelivery {
  id: string;
  attemptsMade: number;
}

/** A delivery with every attempt, as the merchant may see it (the portal's order page). */
export interface DeliveryWithAttempts {
  id: string;
  eventId: string;
  event: OrderEventType;
  status: 'pending' | 'succeeded' | 'failed';
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

const INTERRUPTED = 'no outcome recorded: the worker stopped during this attempt';

/**
 * callback_deliveries and callback_attempts: the outbox the worker drains and its log. The
 * attempt number comes from the row, not from the queue, so a re-enqueued job continues the
 * schedule where the lost one stopped.
 */
@Injectable()
export class CallbackDeliveryRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Takes the next attempt number of a pending delivery and logs the attempt as interrupted
   * until its outcome is recorded, all in one statement. `leaseMs` pushes next_attempt_at past
   * the attempt, so the sweeper leaves a running attempt alone.
   */
  async claimAttempt(deliveryId: string, maxAttempts: number, leaseMs: number): Promise<ClaimResult> {
    const rows: Record<string, unknown>[] = await this.dataSource.query(
      `WITH d AS (
         UPDATE callback_deliveries
            SET attempts_made = attempts_made + 1, next_attempt_at = now() + $3 * interval '1 millisecond', updated_at = now()
          WHERE id = $1 AND status = 'pending' AND attempts_made < $2
          RETURNING id, event_id, order_id, merchant_id, attempts_made),
       a AS (
         INSERT INTO callback_attempts (delivery_id, number, attempted_at, duration_ms, error)
         SELECT id, attempts_made, now(), 0, $4 FROM d)
       SELECT d.id, d.attempts_made, e.id AS event_id, e.type, e.payload,
              COALESCE(r.notify_url, o.notify_url, m.notify_url) AS notify_url, m.api_key, m.api_secret_enc,
              CASE WHEN m.api_secret_previous_until > now() THEN m.api_secret_previous_enc END AS api_secret_previous_enc
         FROM d
         JOIN order_events e ON e.id = d.event_id
         JOIN orders o ON o.id = d.order_id
         JOIN merchants m ON m.id = d.merchant_id
         LEFT JOIN refunds r ON r.id = e.refund_id`,
      [deliveryId, maxAttempts, leaseMs, INTERRUPTED],
    );
    const row = rows[0];
    if (row) {
      return {
        kind: 'claimed',
        attempt: {
          deliveryId: row.id as string,
          number: row.attempts_made as number,
          eventId: row.event_id as string,
          eventType: row.type as OrderEventType,
          payload: row.payload as Record<string, unknown>,
          notifyUrl: (row.notify_url as string | null) ?? null,
          merchantApiKey: row.api_key as string,
          merchantSecretEnc: row.api_secret_enc as string,
          merchantPreviousSecretEnc: (row.api_secret_previous_enc as string | null) ?? null,
        },
      };
    }
    const exhausted: unknown[] = await this.dataSource.query(
      `UPDATE callback_deliveries SET status = 'failed', last_error = COALESCE(last_error, 'no attempts left'), updated_at = now()
        WHERE id = $1 AND status = 'pending' AND attempts_made >= $2 RETURNING id`,
      [deliveryId, maxAttempts],
    );
    return exhausted.length > 0 ? { kind: 'exhausted' } : { kind: 'settled' };
  }

  /**
   * The attempt's outcome and the delivery's new state, in one statement. A failure only
   * updates the delivery if no later attempt was claimed meanwhile; a success always settles it.
   */
  async recordAttempt(deliveryId: string, number: number, attempt: AttemptRecord, delivery: DeliveryUpdate): Promise<void> {
    await this.dataSource.query(
      `WITH a AS (
         UPDATE callback_attempts
            SET url = $3, http_status = $4, duration_ms = $5, response_excerpt = $6, error = $7
          WHERE delivery_id = $1 AND number = $2)
       UPDATE callback_deliveries
          SET status = $8, last_error = $9, next_attempt_at = COALESCE($10, next_attempt_at), updated_at = now()
        WHERE id = $1 AND status = 'pending' AND (attempts_made = $2 OR $8 = 'succeeded')`,
      [
        deliveryId,
        number,
        attempt.url?.slice(0, 512) ?? null,
        attempt.httpStatus,
        attempt.durationMs,
        attempt.responseExcerpt,
        attempt.error,
        delivery.status,
        delivery.lastError,
        delivery.nextAttemptAt,
      ],
    );
  }

  /** Pending deliveries whose next attempt is more than `graceMs` overdue: their job may be lost. */
  async findOverdue(graceMs: number, limit: number): Promise<DueDelivery[]> {
    const rows: { id: string; attempts_made: number }[] = await this.dataSource.query(
      `SELECT id, attempts_made FROM callback_deliveries
        WHERE status = 'pending' AND next_attempt_at < now() - $1 * interval '1 millisecond'
        ORDER BY next_attempt_at LIMIT $2`,
      [graceMs, limit],
    );
    return rows.map((r) => ({ id: r.id, attemptsMade: r.attempts_made }));
  }

  /** After a re-enqueue: the grace period starts again, so the next sweep does not re-check it at once. */
  async touch(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.dataSource.query(
      `UPDATE callback_deliveries SET next_attempt_at = now(), updated_at = now() WHERE id = ANY($1::uuid[]) AND status = 'pending'`,
      [ids],
    );
  }

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
        ORDER BY d.created_at DESC, d.id DESC`,
      [merchantId, orderId],
    );
    // json_agg carries times as text.
    return rows.map((d) => ({ ...d, attempts: d.attempts.map((a) => ({ ...a, attemptedAt: new Date(a.attemptedAt) })) }));
  }

  /**
   * callbackResend (SPEC 7) in one transaction, serialised per order by a lock on the order row,
   * so concurrent resends make one delivery: the order's latest callback event; a pending
   * delivery of it when there is one (nothing new); else, within `limit`, a new delivery due now.
   */
  async resendLatestEvent(merchantId: number, orderNo: string, limit: ResendLimit): Promise<ResendResult> {
    return this.dataSource.transaction(async (em) => {
      const [order]: { id: string }[] = await em.query(`SELECT id FROM orders WHERE merchant_id = $1 AND order_no = $2 FOR NO KEY UPDATE`, [merchantId, orderNo]);
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
        `INSERT INTO callback_deliveries (id, event_id, order_id, merchant_id, status, attempts_made, next_attempt_at, origin)
         VALUES ($1, $2, $3, $4, 'pending', 0, now(), 'resend')`,
        [deliveryId, latest.id, order.id, merchantId],
      );
      return { kind: 'queued', ...event, deliveryId };
    });
  }
}
