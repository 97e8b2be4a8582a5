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
  /** scheme://host:port, '' without an address. */
  destination: string;
  /** Sent through an open circuit: its outcome decides whether the circuit closes. */
  probe: boolean;
}

export interface ClaimRules {
  /** Deliveries to claim at most (the worker's free slots). */
  limit: number;
  /** How long the claim is the worker's: the HTTP budget plus the time to record the outcome. */
  leaseMs: number;
  /** CALLBACK_DESTINATION_CONCURRENCY: live leases per destination, across every worker. */
  perDestination: number;
  /** CALLBACK_CIRCUIT_PROBE_SECONDS, in ms: the wait between two probes of an open circuit. */
  probeMs: number;
  /** The first attempt plus one per scheduled delay. */
  maxAttempts: number;
}

export interface ClaimBatch {
  attempts: ClaimedAttempt[];
  /** Pending rows that had used every attempt (a worker died on the last one): now failed, unsent. */
  exhausted: string[];
}

/** One finished attempt and what it does to its delivery. */
export interface FinishedAttempt {
  deliveryId: string;
  number: number;
  url: string | null;
  httpStatus: number | null;
  durationMs: number;
  responseExcerpt: string | null;
  error: string | null;
  /** The delivery's new state: pending again (with nextAttemptAt), succeeded, or failed for good. */
  status: 'pending' | 'succeeded' | 'failed';
  nextAttemptAt: Date | null;
  /** Whether it tells anything about the destination (false: no address, or our own nonce store failed). */
  countsForCircuit: boolean;
}

export interface CircuitRules {
  /** CALLBACK_CIRCUIT_FAILURES: consecutive failed attempts that open a destination's circuit. */
  failures: number;
  probeMs: number;
}

/** A destination's circuit, as callback_destinations keeps it. */
export interface DestinationCircuit {
  destination: string;
  consecutiveFailures: number;
  circuitOpenSince: Date | null;
  nextProbeAt: Date | null;
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
 * callback_deliveries, callback_attempts and callback_destinations: the outbox, which is also
 * the dispatcher's queue (nothing to lose), its log, and each destination's circuit.
 */
@Injectable()
export class CallbackDeliveryRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * One call of claim_callback_deliveries (the migration CallbackDispatch describes its rules):
   * due deliveries, oldest first, each leased to this worker with its attempt counted and logged
   * as interrupted until recordFinished writes its outcome.
   */
  async claimDue(rules: ClaimRules): Promise<ClaimBatch> {
    const rows: Record<string, unknown>[] = await this.dataSource.query(`SELECT * FROM claim_callback_deliveries($1, $2, $3, $4, $5, $6)`, [
      rules.limit,
      rules.leaseMs,
      rules.perDestination,
      rules.probeMs,
      rules.maxAttempts,
      INTERRUPTED,
    ]);
    const batch: ClaimBatch = { attempts: [], exhausted: [] };
    for (const row of rows) {
      if (row.exhausted) {
        batch.exhausted.push(row.delivery_id as string);
        continue;
      }
      batch.attempts.push({
        deliveryId: row.delivery_id as string,
        number: row.attempt as number,
        eventId: row.event_id as string,
        eventType: row.event_type as OrderEventType,
        payload: row.payload as Record<string, unknown>,
        notifyUrl: (row.notify_url as string | null) ?? null,
        merchantApiKey: row.api_key as string,
        merchantSecretEnc: row.api_secret_enc as string,
        merchantPreviousSecretEnc: (row.api_secret_previous_enc as string | null) ?? null,
        destination: row.destination as string,
        probe: row.probe as boolean,
      });
    }
    return batch;
  }

  /**
   * Finished attempts in one statement: each attempt's log row, its delivery's new state with
   * the lease cleared (a failure only if no later attempt was claimed meanwhile; a success
   * always settles it), and each destination's circuit: a success closes it and resets the
   * count, failures after the batch's last success add up and open it at `circuit.failures`.
   */
  async recordFinished(finished: FinishedAttempt[], circuit: CircuitRules): Promise<void> {
    if (finished.length === 0) return;
    // Sorted by id, so two workers' batches lock delivery rows in one order.
    const rows = finished.map((f, ord) => ({ ...f, ord })).sort((a, b) => (a.deliveryId < b.deliveryId ? -1 : 1));
    await this.dataSource.query(
      `WITH input AS (
         SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::int[], $5::int[], $6::text[], $7::text[], $8::text[], $9::timestamptz[], $10::boolean[], $11::int[])
           AS i(id, number, url, http_status, duration_ms, excerpt, error, status, next_attempt_at, counts, ord)),
       attempts AS (
         UPDATE callback_attempts a
            SET url = left(i.url, 512), http_status = i.http_status, duration_ms = i.duration_ms, response_excerpt = i.excerpt, error = i.error
           FROM input i WHERE a.delivery_id = i.id AND a.number = i.number),
       deliveries AS (
         UPDATE callback_deliveries d
            SET status = i.status, last_error = i.error, next_attempt_at = COALESCE(i.next_attempt_at, d.next_attempt_at),
                lease_until = NULL, destination = callback_destination(i.url), updated_at = now()
           FROM input i
          WHERE d.id = i.id AND d.status = 'pending' AND (d.attempts_made = i.number OR i.status = 'succeeded')),
       outcomes AS (
         SELECT callback_destination(i.url) AS destination, i.ord, i.status = 'succeeded' AS ok FROM input i WHERE i.counts),
       ranked AS (
         SELECT o.*, max(o.ord) FILTER (WHERE o.ok) OVER (PARTITION BY o.destination) AS last_ok FROM outcomes o WHERE o.destination <> ''),
       per_destination AS (
         SELECT r.destination, bool_or(r.ok) AS any_ok, count(*) FILTER (WHERE NOT r.ok AND r.ord > COALESCE(r.last_ok, -1))::int AS failures
           FROM ranked r GROUP BY r.destination)
       INSERT INTO callback_destinations AS c (destination, consecutive_failures, circuit_open_since, next_probe_at, last_success_at, last_failure_at, updated_at)
       SELECT p.destination, p.failures,
              CASE WHEN p.failures >= $12 THEN now() END,
              CASE WHEN p.failures >= $12 THEN now() + $13 * interval '1 millisecond' END,
              CASE WHEN p.any_ok THEN now() END,
              CASE WHEN p.failures > 0 THEN now() END,
              now()
         FROM per_destination p ORDER BY p.destination
       ON CONFLICT (destination) DO UPDATE SET
         consecutive_failures = CASE WHEN EXCLUDED.last_success_at IS NOT NULL THEN EXCLUDED.consecutive_failures
                                     ELSE c.consecutive_failures + EXCLUDED.consecutive_failures END,
         circuit_open_since = CASE WHEN EXCLUDED.last_success_at IS NOT NULL THEN EXCLUDED.circuit_open_since
                                   ELSE COALESCE(c.circuit_open_since, CASE WHEN c.consecutive_failures + EXCLUDED.consecutive_failures >= $12 THEN now() END) END,
         next_probe_at = CASE WHEN EXCLUDED.last_success_at IS NOT NULL THEN EXCLUDED.next_probe_at
                              WHEN c.circuit_open_since IS NOT NULL THEN c.next_probe_at
                              WHEN c.consecutive_failures + EXCLUDED.consecutive_failures >= $12 THEN now() + $13 * interval '1 millisecond' END,
         last_success_at = COALESCE(EXCLUDED.last_success_at, c.last_success_at),
         last_failure_at = COALESCE(EXCLUDED.last_failure_at, c.last_failure_at),
         updated_at = now()`,
      [
        rows.map((r) => r.deliveryId),
        rows.map((r) => r.number),
        rows.map((r) => r.url),
        rows.map((r) => r.httpStatus),
        rows.map((r) => r.durationMs),
        rows.map((r) => r.responseExcerpt),
        rows.map((r) => r.error),
        rows.map((r) => r.status),
        rows.map((r) => r.nextAttemptAt),
        rows.map((r) => r.countsForCircuit),
        rows.map((r) => r.ord),
        circuit.failures,
        circuit.probeMs,
      ],
    );
  }

  /**
   * Milliseconds until the next pending delivery comes due, or null when none is scheduled. Rows
   * already due but not claimed wait for something else (an earlier event, a free slot, a probe),
   * which a recording or the poll brings: they do not count here.
   */
  async nextDueInMs(): Promise<number | null> {
    const [row]: { ms: number | null }[] = await this.dataSource.query(
      `SELECT ceil(extract(epoch FROM min(next_attempt_at) - now()) * 1000)::int AS ms FROM callback_deliveries WHERE status = 'pending' AND next_attempt_at > now()`,
    );
    return row?.ms ?? null;
  }

  /** A destination's circuit, or null before its first recorded attempt. */
  async circuit(destination: string): Promise<DestinationCircuit | null> {
    const [row]: DestinationCircuit[] = await this.dataSource.query(
      `SELECT destination, consecutive_failures AS "consecutiveFailures", circuit_open_since AS "circuitOpenSince", next_probe_at AS "nextProbeAt"
         FROM callback_destinations WHERE destination = $1`,
      [destination],
    );
    return row ?? null;
  }

  /** For the gauges: destinations whose circuit is open, and the due deliveries they hold back. */
  async circuitFigures(): Promise<{ openCircuits: number; heldDeliveries: number }> {
    const [row]: { open: number; held: number }[] = await this.dataSource.query(
      `SELECT (SELECT count(*)::int FROM callback_destinations WHERE circuit_open_since IS NOT NULL) AS open,
              (SELECT count(*)::int FROM callback_destinations c JOIN callback_deliveries d ON d.destination = c.destination
                WHERE c.circuit_open_since IS NOT NULL AND d.status = 'pending' AND d.next_attempt_at <= now()) AS held`,
    );
    return { openCircuits: row.open, heldDeliveries: row.held };
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
