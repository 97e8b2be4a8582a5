import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { OrderEventType } from '../entities';
import { orderHeadSql } from '../sql/callback-functions';
import { StatementBatcher } from '../statement-batcher';

/** A pending delivery that may have a job now: the first pending one of its order (SPEC 7 Order). */
export interface DeliveryHead {
  id: string;
  merchantId: number;
  notifyUrl: string | null;
}

/** What one attempt needs, read just before it: the delivery, its event and its merchant's secrets. */
export interface LoadedDelivery {
  deliveryId: string;
  status: 'pending' | 'succeeded' | 'failed' | 'no_address';
  /** Attempts recorded so far: this attempt is the next one. */
  attemptsMade: number;
  eventId: string;
  eventType: OrderEventType;
  payload: Record<string, unknown>;
  /** Resolved when the delivery was written (SPEC 7 Address). */
  notifyUrl: string | null;
  merchantApiKey: string;
  merchantSecretEnc: string;
  /** The secret before the last rotation while its grace lasts (SPEC 3), else null. */
  merchantPreviousSecretEnc: string | null;
}

/** One attempt once sent, and what the policy and the gate made of it. */
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
  /** The parser's destination, '' without a usable address. */
  destination: string;
  /** The key's circuit change the gate reported, mirrored for the pages and tools; null for none. */
  circuit: { transition: 'opened' | 'probe_failed' | 'closed'; failures: number; nextProbeAt: Date | null } | null;
}

/** What recording an attempt did. */
export interface RecordedAttempt {
  /** False when the attempt was recorded already (a duplicate run) or the delivery had ended. */
  recorded: boolean;
  ended: boolean;
  /** The order's next pending delivery once this one ended: it gets its job now. */
  next: DeliveryHead | null;
}

type Row = Record<string, unknown>;

/**
 * Loads and records asked at once in a worker go as one statement each (group commit): one
 * round trip and, for the records, one WAL flush for several deliveries. One batch in flight
 * (issue 20: bigger batches cost PostgreSQL less per delivery than two).
 */
const CALLBACK_BATCHES = { maxBatch: 64, maxInFlight: 1 };

/** A batch's rows back in the order of its items (ord is 1-based); an item without a row answers undefined. */
function byOrdinal(rows: Row[], count: number): (Row | undefined)[] {
  const answers: (Row | undefined)[] = new Array(count);
  for (const row of rows) answers[Number(row.ord) - 1] = row;
  return answers;
}

/**
 * The record of callback attempts (docs/callbacks-design.md): which new deliveries get a job
 * (heads), what an attempt needs (load, a plain read), and its outcome written once (record).
 * No lease, no placeholder: the BullMQ job is the lease, and nothing is written before an attempt.
 */
@Injectable()
export class CallbackAttemptRepository {
  private readonly logger = new Logger('CallbackAttemptRepository');
  private readonly loads = new StatementBatcher<string, Row | undefined>(
    (ids) => this.loadMany(ids),
    (id) => this.loadMany([id]).then(([row]) => row),
    CALLBACK_BATCHES,
  );
  private readonly records = new StatementBatcher<FinishedAttempt, Row | undefined>(
    (items) => this.recordMany(items),
    (item) => this.recordMany([item]).then(([row]) => row),
    CALLBACK_BATCHES,
    (err, size) => {
      const e = err as { code?: string; message?: string };
      this.logger.warn({ statement: 'record', size, code: e?.code ?? null, err: e?.message ?? String(err) }, 'callback batch failed, its items go one by one');
    },
  );

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Of these deliveries, the ones first in their order (SPEC 7 Order): only they get a job. */
  async heads(ids: string[]): Promise<DeliveryHead[]> {
    if (ids.length === 0) return [];
    return this.dataSource.query(
      `SELECT d.id, d.merchant_id AS "merchantId", d.notify_url AS "notifyUrl" FROM callback_deliveries d WHERE d.id = ANY($1::uuid[]) AND ${orderHeadSql('d')}`,
      [ids],
    );
  }

  /** What the next attempt of this delivery needs; null when the delivery is not there. Batched. */
  async load(deliveryId: string): Promise<LoadedDelivery | null> {
    const row = await this.loads.submit(deliveryId);
    if (!row) return null;
    return {
      deliveryId,
      status: row.status as LoadedDelivery['status'],
      attemptsMade: row.attempts_made as number,
      eventId: row.event_id as string,
      eventType: row.event_type as OrderEventType,
      payload: row.payload as Record<string, unknown>,
      notifyUrl: (row.notify_url as string | null) ?? null,
      merchantApiKey: row.api_key as string,
      merchantSecretEnc: row.api_secret_enc as string,
      merchantPreviousSecretEnc: (row.api_secret_previous_enc as string | null) ?? null,
    };
  }

  /** One call of record_callback_attempt. Batched like load(). */
  async record(f: FinishedAttempt): Promise<RecordedAttempt> {
    const row = await this.records.submit(f);
    if (!row) throw new Error(`record_callback_attempt answered nothing for delivery ${f.deliveryId}`);
    const next = row.next_delivery
      ? { id: row.next_delivery as string, merchantId: row.next_merchant_id as number, notifyUrl: (row.next_notify_url as string | null) ?? null }
      : null;
    return { recorded: row.recorded as boolean, ended: row.ended as boolean, next };
  }

  private async loadMany(ids: string[]): Promise<(Row | undefined)[]> {
    const rows: Row[] = await this.dataSource.query(
      `SELECT u.ord, d.status, d.attempts_made, d.notify_url, e.id AS event_id, e.type AS event_type, e.payload, m.api_key, m.api_secret_enc,
              -- During a rotation's grace the previous secret signs too (SPEC 3: both v1, entries).
              CASE WHEN m.api_secret_previous_until > now() THEN m.api_secret_previous_enc END AS api_secret_previous_enc
         FROM unnest($1::uuid[]) WITH ORDINALITY AS u(id, ord)
         JOIN callback_deliveries d ON d.id = u.id JOIN order_events e ON e.id = d.event_id JOIN merchants m ON m.id = d.merchant_id`,
      [ids],
    );
    return byOrdinal(rows, ids.length);
  }

  /**
   * Records in one statement, record_callback_attempt per item, in one order of (merchant,
   * destination, delivery) so two workers' batches lock rows alike. The ORDER BY keeps the
   * subquery from being pulled up; a LATERAL call runs once per row in the order the rows come.
   */
  private async recordMany(items: FinishedAttempt[]): Promise<(Row | undefined)[]> {
    const rows: Row[] = await this.dataSource.query(
      `SELECT s.ord, r.* FROM (
         SELECT u.* FROM unnest($1::uuid[], $2::int[], $3::text[], $4::int[], $5::int[], $6::text[], $7::text[], $8::text[], $9::timestamptz[],
                                $10::text[], $11::text[], $12::int[], $13::timestamptz[])
                 WITH ORDINALITY AS u(id, number, url, http_status, duration_ms, excerpt, error, status, next_attempt_at, destination, circuit, failures, next_probe_at, ord)
           LEFT JOIN callback_deliveries d ON d.id = u.id
          ORDER BY d.merchant_id, u.destination, u.id) s
       CROSS JOIN LATERAL record_callback_attempt(s.id, s.number, s.url, s.http_status, s.duration_ms, s.excerpt, s.error, s.status, s.next_attempt_at,
                                                  s.destination, s.circuit, s.failures, s.next_probe_at) AS r`,
      [
        items.map((i) => i.deliveryId),
        items.map((i) => i.number),
        items.map((i) => i.url),
        items.map((i) => i.httpStatus),
        items.map((i) => i.durationMs),
        items.map((i) => i.responseExcerpt),
        items.map((i) => i.error),
        items.map((i) => i.status),
        items.map((i) => i.nextAttemptAt),
        items.map((i) => i.destination),
        items.map((i) => i.circuit?.transition ?? ''),
        items.map((i) => i.circuit?.failures ?? 0),
        items.map((i) => i.circuit?.nextProbeAt ?? null),
      ],
    );
    return byOrdinal(rows, items.length);
  }
}
