import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { CALLBACK_EVENT_TYPES, type OrderEventType } from '../entities';
import { StatementBatcher } from '../statement-batcher';
import { deliveryAddressSql } from './delivery-address';

/** A pending delivery that may have a job now: no earlier event of its order is pending. */
export interface DeliveryHead {
  id: string;
  merchantId: number;
  notifyUrl: string | null;
}

/** What the worker needs for one attempt, read in the statement that claims it. */
export interface ClaimedAttempt {
  deliveryId: string;
  /** 1 for the first attempt of this delivery. */
  number: number;
  eventId: string;
  eventType: OrderEventType;
  payload: Record<string, unknown>;
  /** Resolved when the delivery was written (SPEC 7 Address); null when there was none. */
  notifyUrl: string | null;
  merchantApiKey: string;
  merchantSecretEnc: string;
  /** The secret before the last rotation while its grace lasts (SPEC 3), else null. */
  merchantPreviousSecretEnc: string | null;
  /** Sent through an open circuit: its outcome decides whether the circuit closes. */
  probe: boolean;
}

/** claim_callback_attempt's answer (libs/db/src/sql/callback-functions.ts says when each comes). */
export type AttemptClaim =
  { kind: 'claimed'; attempt: ClaimedAttempt } | { kind: 'settled' | 'waiting' | 'exhausted' } | { kind: 'leased' | 'held'; until: Date };

export interface ClaimRules {
  /** How long the attempt is this worker's: the HTTP budget plus the time to record the outcome. */
  leaseMs: number;
  /** CALLBACK_CIRCUIT_PROBE_SECONDS, in ms: the wait between two probes of an open circuit. */
  probeMs: number;
  /** DeliveryPolicy.maxAttempts. */
  maxAttempts: number;
}

/** One finished attempt and what the policy made of it. */
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
  /** What it tells the (merchant, destination) circuit; 'none' for our own failures. */
  circuit: 'success' | 'failure' | 'none';
  /** The parser's destination, '' without a usable address. */
  destination: string;
}

/** What recording an attempt changed. */
export interface RecordedAttempt {
  /** The delivery is settled now (succeeded or failed for good). */
  ended: boolean;
  /** This success closed an open circuit: the deliveries it held may go. */
  circuitClosed: boolean;
  /** This failure opened its circuit: of several failures of one key at once, exactly one. */
  circuitOpened: boolean;
  /** The order's next pending delivery once this one ended: it gets its job now. */
  next: DeliveryHead | null;
}

export interface CircuitRules {
  /** CALLBACK_CIRCUIT_FAILURES: consecutive failed attempts that open a key's circuit. */
  failures: number;
  probeMs: number;
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

type Row = Record<string, unknown>;
interface ClaimRequest {
  deliveryId: string;
  destination: string;
  rules: ClaimRules;
}
interface RecordRequest {
  f: FinishedAttempt;
  circuit: CircuitRules;
}

/**
 * Claims and records made at once in a worker go as one statement (group commit): at
 * concurrency 32, one round trip, one socket write and one WAL flush for several deliveries instead
 * of one each. One batch in flight: the bigger batches cost PostgreSQL ~10% less per delivery
 * than two (issue 20); a lone request still goes at once. They use 2 connections, so
 * DATABASE_POOL_SIZE (4, 8, 38) changed nothing.
 */
const CALLBACK_BATCHES = { maxBatch: 64, maxInFlight: 1 };

/**
 * The order a batch calls its functions in, so two batches (two workers, or two in flight in one)
 * lock their rows in the same order: by (merchant, destination, delivery), each call locking its
 * delivery and then its circuit. A probe's or a failure's circuit lock between two deliveries
 * of one key can still cross another batch's: PostgreSQL breaks that deadlock, the batch fails
 * and its items go again one by one (StatementBatcher). The ORDER BY keeps the subquery from
 * being pulled up, and a LATERAL call runs once per row in the order the rows come.
 */
const LOCK_ORDER = 'ORDER BY d.merchant_id, u.destination, u.id';

/** A batch's rows back in the order of its items (ord is 1-based); an item without a row answers undefined. */
function byOrdinal(rows: Row[], count: number): (Row | undefined)[] {
  const answers: (Row | undefined)[] = new Array(count);
  for (const row of rows) answers[Number(row.ord) - 1] = row;
  return answers;
}

/**
 * callback_deliveries, callback_attempts and callback_circuits: the outbox (the truth each
 * callback job carries out), its log, and each (merchant, destination) circuit. Every statement
 * touches rows by key: a delivery, an order's pending rows, one circuit; none scans the backlog.
 */
@Injectable()
export class CallbackDeliveryRepository {
  private readonly logger = new Logger('CallbackDeliveryRepository');
  private readonly claims = new StatementBatcher<ClaimRequest, Row | undefined>(
    (items) => this.claimMany(items),
    (item) => this.claimMany([item]).then(([row]) => row),
    CALLBACK_BATCHES,
    (err, size) => this.batchFailed('claim', err, size),
  );
  private readonly records = new StatementBatcher<RecordRequest, Row | undefined>(
    (items) => this.recordMany(items),
    (item) => this.recordMany([item]).then(([row]) => row),
    CALLBACK_BATCHES,
    (err, size) => this.batchFailed('record', err, size),
  );

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  private batchFailed(statement: 'claim' | 'record', err: unknown, size: number): void {
    const e = err as { code?: string; message?: string };
    this.logger.warn({ statement, size, code: e?.code ?? null, err: e?.message ?? String(err) }, 'callback batch failed, its items go one by one');
  }

  /** Of these deliveries, the pending ones that are first in their order (SPEC 7 Order): only they get a job. */
  async heads(ids: string[]): Promise<DeliveryHead[]> {
    if (ids.length === 0) return [];
    return this.dataSource.query(
      `SELECT d.id, d.merchant_id AS "merchantId", d.notify_url AS "notifyUrl" FROM callback_deliveries d
        WHERE d.id = ANY($1::uuid[]) AND d.status = 'pending'
          AND NOT EXISTS (SELECT 1 FROM callback_deliveries e WHERE e.order_id = d.order_id AND e.status = 'pending' AND e.event_seq < d.event_seq)`,
      [ids],
    );
  }

  /**
   * One call of claim_callback_attempt: the next attempt of this delivery, or why not now. Claims
   * made at once in this process go together in one statement (claimMany).
   */
  async claim(deliveryId: string, destination: string, rules: ClaimRules): Promise<AttemptClaim> {
    const row = await this.claims.submit({ deliveryId, destination, rules });
    if (!row) throw new Error(`claim_callback_attempt answered nothing for delivery ${deliveryId}`);
    const kind = row.kind as AttemptClaim['kind'];
    if (kind === 'leased' || kind === 'held') return { kind, until: row.wait_until as Date };
    if (kind !== 'claimed') return { kind };
    return {
      kind,
      attempt: {
        deliveryId,
        number: row.attempt as number,
        eventId: row.event_id as string,
        eventType: row.event_type as OrderEventType,
        payload: row.payload as Record<string, unknown>,
        notifyUrl: (row.notify_url as string | null) ?? null,
        merchantApiKey: row.api_key as string,
        merchantSecretEnc: row.api_secret_enc as string,
        merchantPreviousSecretEnc: (row.api_secret_previous_enc as string | null) ?? null,
        probe: row.probe as boolean,
      },
    };
  }

  /** One call of record_callback_attempt: stores the outcome the policy judged, and says what it changed. Batched like claim(). */
  async record(f: FinishedAttempt, circuit: CircuitRules): Promise<RecordedAttempt> {
    const row = await this.records.submit({ f, circuit });
    if (!row) throw new Error(`record_callback_attempt answered nothing for delivery ${f.deliveryId}`);
    const next = row.next_delivery
      ? { id: row.next_delivery as string, merchantId: row.next_merchant_id as number, notifyUrl: (row.next_notify_url as string | null) ?? null }
      : null;
    return { ended: row.ended as boolean, circuitClosed: row.circuit_closed as boolean, circuitOpened: row.circuit_opened as boolean, next };
  }

  /** Claims in one statement (one alone too), claim_callback_attempt per item, in LOCK_ORDER. */
  private async claimMany(items: ClaimRequest[]): Promise<(Row | undefined)[]> {
    const rows: Row[] = await this.dataSource.query(
      `SELECT s.ord, c.* FROM (
         SELECT u.* FROM unnest($1::uuid[], $2::text[], $3::int[], $4::int[], $5::int[]) WITH ORDINALITY AS u(id, destination, lease_ms, probe_ms, max_attempts, ord)
           LEFT JOIN callback_deliveries d ON d.id = u.id
          ${LOCK_ORDER}) s
       CROSS JOIN LATERAL claim_callback_attempt(s.id, s.destination, s.lease_ms, s.probe_ms, s.max_attempts, $6) AS c`,
      [
        items.map((i) => i.deliveryId),
        items.map((i) => i.destination),
        items.map((i) => i.rules.leaseMs),
        items.map((i) => i.rules.probeMs),
        items.map((i) => i.rules.maxAttempts),
        INTERRUPTED,
      ],
    );
    return byOrdinal(rows, items.length);
  }

  /** Records in one statement (one alone too), record_callback_attempt per item, in LOCK_ORDER. */
  private async recordMany(items: RecordRequest[]): Promise<(Row | undefined)[]> {
    const rows: Row[] = await this.dataSource.query(
      `SELECT s.ord, r.* FROM (
         SELECT u.* FROM unnest($1::uuid[], $2::int[], $3::text[], $4::int[], $5::int[], $6::text[], $7::text[], $8::text[], $9::timestamptz[],
                                $10::text[], $11::text[], $12::int[], $13::int[])
                 WITH ORDINALITY AS u(id, number, url, http_status, duration_ms, excerpt, error, status, next_attempt_at, circuit, destination, failures, probe_ms, ord)
           LEFT JOIN callback_deliveries d ON d.id = u.id
          ${LOCK_ORDER}) s
       CROSS JOIN LATERAL record_callback_attempt(s.id, s.number, s.url, s.http_status, s.duration_ms, s.excerpt, s.error, s.status, s.next_attempt_at,
                                                  s.circuit, s.destination, s.failures, s.probe_ms) AS r`,
      [
        items.map((i) => i.f.deliveryId),
        items.map((i) => i.f.number),
        items.map((i) => i.f.url),
        items.map((i) => i.f.httpStatus),
        items.map((i) => i.f.durationMs),
        items.map((i) => i.f.responseExcerpt),
        items.map((i) => i.f.error),
        items.map((i) => i.f.status),
        items.map((i) => i.f.nextAttemptAt),
        items.map((i) => i.f.circuit),
        items.map((i) => i.f.destination),
        items.map((i) => i.circuit.failures),
        items.map((i) => i.circuit.probeMs),
      ],
    );
    return byOrdinal(rows, items.length);
  }

  /** Whether the key's circuit is open now (a held job's second look once parked). */
  async circuitIsOpen(merchantId: number, destination: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(
      `SELECT 1 FROM callback_circuits WHERE merchant_id = $1 AND destination = $2 AND open_since IS NOT NULL`,
      [merchantId, destination],
    );
    return rows.length > 0;
  }

  /** Whether an earlier event of this delivery's order still has a pending delivery (SPEC 7 Order: it goes first). */
  async hasEarlierPending(deliveryId: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(
      `SELECT 1 FROM callback_deliveries d JOIN callback_deliveries e ON e.order_id = d.order_id AND e.status = 'pending' AND e.event_seq < d.event_seq
        WHERE d.id = $1 LIMIT 1`,
      [deliveryId],
    );
    return rows.length > 0;
  }

  /** The deliveries an open circuit of this key parked (their jobs wait for the probe time): a closed circuit releases them. */
  async heldBy(merchantId: number, destination: string, limit: number): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(
      `SELECT id FROM callback_deliveries WHERE merchant_id = $1 AND destination = $2 AND status = 'pending' AND next_attempt_at > now() LIMIT $3`,
      [merchantId, destination, limit],
    );
    return rows.map((r) => r.id);
  }

  /**
   * Pending deliveries first in their order whose attempt is more than `graceMs` overdue: their
   * job may be gone (Redis emptied, an add after commit failed). Each is pushed `graceMs` on in
   * the same statement, so the next sweep moves on to others while these get their job back.
   */
  async takeOverdue(graceMs: number, limit: number): Promise<DeliveryHead[]> {
    return this.dataSource.query(
      `WITH taken AS (
         UPDATE callback_deliveries d SET next_attempt_at = now() + $1 * interval '1 millisecond'
          WHERE d.id IN (SELECT x.id FROM callback_deliveries x
                          WHERE x.status = 'pending' AND x.next_attempt_at < now() - $1 * interval '1 millisecond'
                            AND NOT EXISTS (SELECT 1 FROM callback_deliveries e WHERE e.order_id = x.order_id AND e.status = 'pending' AND e.event_seq < x.event_seq)
                          ORDER BY x.next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING d.id, d.merchant_id AS "merchantId", d.notify_url AS "notifyUrl")
       SELECT * FROM taken`,
      [graceMs, limit],
    );
  }

  /** For the gauges: keys whose circuit is open, and the pending deliveries they hold back. */
  async circuitFigures(): Promise<{ openCircuits: number; heldDeliveries: number }> {
    const [row]: { open: number; held: number }[] = await this.dataSource.query(
      `SELECT (SELECT count(*)::int FROM callback_circuits WHERE open_since IS NOT NULL) AS open,
              (SELECT count(*)::int FROM callback_circuits c JOIN callback_deliveries d ON d.merchant_id = c.merchant_id AND d.destination = c.destination
                WHERE c.open_since IS NOT NULL AND d.status = 'pending') AS held`,
    );
    return { openCircuits: row.open, heldDeliveries: row.held };
  }

  /**
   * Deliveries by status, for the merchant_pay_callback_deliveries gauge: a sum over the slots of
   * callback_delivery_counts (the changes appended since the sweep last folded them), never a count over the deliveries.
   */
  async statusCounts(): Promise<Record<string, number>> {
    const rows: { status: string; count: string }[] = await this.dataSource.query(
      'SELECT status, sum(n) AS count FROM callback_delivery_counts GROUP BY status',
    );
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.count)]));
  }

  /**
   * The sweep's fold of callback_delivery_counts: the rows it can see become one per status (a
   * status whose changes cancel out leaves none). Rows appended meanwhile are left for the next
   * fold; two folds at once delete each row once. Answers how many rows it folded.
   */
  async foldStatusCounts(): Promise<number> {
    const [row]: { folded: number }[] = await this.dataSource.query(
      `WITH gone AS (DELETE FROM callback_delivery_counts RETURNING status, n),
            kept AS (INSERT INTO callback_delivery_counts (status, n) SELECT status, sum(n) FROM gone GROUP BY status HAVING sum(n) <> 0)
       SELECT count(*)::int AS folded FROM gone`,
    );
    return row.folded;
  }

  /** Circuits open now: one row per destination, counted at each scrape so the figure is never stale. */
  async openCircuitCount(): Promise<number> {
    const [row]: { open: number }[] = await this.dataSource.query(`SELECT count(*)::int AS open FROM callback_circuits WHERE open_since IS NOT NULL`);
    return row.open;
  }

  /** Seconds since the oldest due pending delivery was due (0 when none is): min() on ix_deliveries_due, one index probe. */
  async deliveryLagSeconds(): Promise<number> {
    const [row]: { lag: number | null }[] = await this.dataSource.query(
      `SELECT extract(epoch FROM now() - min(next_attempt_at))::float8 AS lag FROM callback_deliveries WHERE status = 'pending' AND next_attempt_at <= now()`,
    );
    return Math.max(0, row.lag ?? 0);
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
        `INSERT INTO callback_deliveries (id, event_id, order_id, merchant_id, status, attempts_made, next_attempt_at, origin, notify_url, event_seq)
         SELECT $1, e.id, e.order_id, $3, 'pending', 0, now(), 'resend', ${deliveryAddressSql('e')}, e.seq FROM order_events e WHERE e.id = $2`,
        [deliveryId, latest.id, merchantId],
      );
      return { kind: 'queued', ...event, deliveryId };
    });
  }
}
