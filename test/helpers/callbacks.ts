import { randomInt, randomUUID } from 'node:crypto';
import { type IncomingHttpHeaders, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { deliveryAddressSql } from '@app/db';
import { removeTestKeys } from './redis-keys';

export interface ReceivedCallback {
  /** The request's path, e.g. /notify. */
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  /** The JSON body; {} when the request had none (a client following a redirect with GET). */
  body: Record<string, unknown>;
  at: number;
  /** Of a streamed answer (Reply.streamBytes): bytes handed to the socket, and whether all of them were flushed. */
  answer?: { written: number; finished: boolean; closed: boolean };
}

export interface Reply {
  status?: number;
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** Answer after this long (longer than the worker's timeout: a timed-out attempt). */
  delayMs?: number;
  /** Stream a body of this many bytes, as fast as the client reads it. */
  streamBytes?: number;
}

/** A real HTTP merchant endpoint: records every callback and answers as `respond` says. */
export class CallbackReceiver {
  readonly received: ReceivedCallback[] = [];
  /** `index`: 0 for the first callback of this event_id, 1 for the next... */
  respond: (callback: ReceivedCallback, index: number) => Reply = () => ({ status: 200, body: 'success' });
  private server: Server;
  private readonly timers = new Set<NodeJS.Timeout>();

  static async start(): Promise<CallbackReceiver> {
    const receiver = new CallbackReceiver();
    await receiver.listen();
    return receiver;
  }

  private listen(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const callback: ReceivedCallback = {
          path: req.url ?? '',
          headers: req.headers,
          raw,
          body: raw ? (JSON.parse(raw) as Record<string, unknown>) : {},
          at: Date.now(),
        };
        this.received.push(callback);
        const reply = this.respond(callback, this.forEvent(callback.body.event_id as string).length - 1);
        const send = (): void => this.send(res, reply, callback);
        if (reply.delayMs) {
          const timer = setTimeout(() => {
            this.timers.delete(timer);
            send();
          }, reply.delayMs);
          this.timers.add(timer);
        } else send();
      });
    });
    return new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  private send(res: ServerResponse, reply: Reply, callback: ReceivedCallback): void {
    if (res.destroyed) return;
    res.writeHead(reply.status ?? 200, { 'content-type': 'text/plain', ...reply.headers });
    if (reply.streamBytes) this.stream(res, reply.streamBytes, callback);
    else res.end(reply.body ?? '');
  }

  /** Writes `total` bytes, waiting for the client to read (drain) whenever the socket's buffers are full. */
  private stream(res: ServerResponse, total: number, callback: ReceivedCallback): void {
    const answer = { written: 0, finished: false, closed: false };
    callback.answer = answer;
    res.on('finish', () => (answer.finished = true));
    res.on('close', () => (answer.closed = true));
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const pump = (): void => {
      while (answer.written < total && !res.destroyed) {
        const piece = chunk.subarray(0, Math.min(chunk.length, total - answer.written));
        answer.written += piece.length;
        if (!res.write(piece)) {
          res.once('drain', pump);
          return;
        }
      }
      if (!res.destroyed) res.end();
    };
    pump();
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/notify`;
  }

  forEvent(eventId: string): ReceivedCallback[] {
    return this.received.filter((c) => c.body.event_id === eventId);
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

export async function waitFor<T>(
  probe: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * How long a spec waits for a change announced by NOTIFY to be served: far below the caches' 60 s
 * max age, so a pass proves the announcement did it. How fast it is, is bench:contract-timings' figure.
 */
export const HEARD_WITHIN_MS = 10_000;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface DeliveryRow {
  id: string;
  event_id: string;
  status: string;
  attempts_made: number;
  last_error: string | null;
  next_attempt_at: Date;
  destination: string;
}

export interface AttemptRow {
  number: number;
  url: string | null;
  http_status: number | null;
  duration_ms: number;
  response_excerpt: string | null;
  error: string | null;
  attempted_at: Date;
}

/** Direct SQL on the test's database: fixtures the outbox would write, and reads of the log. */
export class CallbackFixtures {
  private constructor(readonly db: Client) {}

  static async connect(databaseUrl: string): Promise<CallbackFixtures> {
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    return new CallbackFixtures(db);
  }

  /** An order as createOrder leaves it (pending), or already paid. */
  async insertOrder(
    merchantId: number,
    channelId: number,
    options: { status?: 'pending' | 'paid'; notifyUrl?: string | null } = {},
  ): Promise<{ orderId: string; orderNo: string }> {
    const orderNo = `20251121120000${String(randomInt(0, 99_999_999)).padStart(8, '0')}`;
    const status = options.status ?? 'paid';
    const { rows } = await this.db.query<{ id: string }>(
      `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, payment_method, cny_fen, service_rate, service_fen, deposit_rate,
                           deposit_fen, merchant_actual_fen, merchant_order_no, notify_url, request_hash, paid_at, expires_at, created_at, updated_at)
       VALUES ($1, $2, $3, 1, $4, 'alipay', 10000, 0.006, 60, 0, 0, 9940, $5, $6, $7, $8, now() + interval '1 hour', now(), now())
       RETURNING id`,
      [orderNo, merchantId, channelId, status, `M-${orderNo.slice(-8)}`, options.notifyUrl ?? null, 'x'.repeat(64), status === 'paid' ? new Date() : null],
    );
    return { orderId: String(rows[0].id), orderNo };
  }

  /** The outbox rows of a transition: an event with its SPEC 7 facts and its first delivery. */
  async insertEvent(orderId: string, type = 'order.paid'): Promise<{ eventId: string; deliveryId: string }> {
    const eventId = randomUUID();
    const deliveryId = randomUUID();
    const now = Math.floor(Date.now() / 1000);
    const { rows } = await this.db.query<{ merchant_id: number; order_no: string; merchant_order_no: string; status: string }>(
      `SELECT merchant_id, order_no, merchant_order_no, status FROM orders WHERE id = $1`,
      [orderId],
    );
    const o = rows[0];
    const payload = {
      event_id: eventId,
      event: type,
      order_no: o.order_no,
      merchant_order_no: o.merchant_order_no,
      order_type: 1,
      status: o.status,
      cny_amount: '100.00',
      merchant_actual_amount: 9940,
      service_rate: '0.00600000',
      service_amount: 60,
      createtime: now,
      updatetime: now,
      paid_at: now,
    };
    await this.db.query(`INSERT INTO order_events (id, order_id, merchant_id, type, payload) VALUES ($1, $2, $3, $4, $5)`, [
      eventId,
      orderId,
      o.merchant_id,
      type,
      payload,
    ]);
    // As the service writes a delivery: its address resolved now and kept, its event's place in the order.
    await this.db.query(
      `INSERT INTO callback_deliveries (id, event_id, order_id, merchant_id, status, attempts_made, next_attempt_at, notify_url, event_seq)
       SELECT $1, e.id, e.order_id, e.merchant_id, 'pending', 0, now(), ${deliveryAddressSql('e')}, e.seq FROM order_events e WHERE e.id = $2`,
      [deliveryId, eventId],
    );
    return { eventId, deliveryId };
  }

  async delivery(id: string): Promise<DeliveryRow> {
    const { rows } = await this.db.query<DeliveryRow>(`SELECT * FROM callback_deliveries WHERE id = $1`, [id]);
    return rows[0];
  }

  /** A (merchant, destination) circuit, or null before its first failure. */
  async circuit(merchantId: number, destination: string): Promise<{ consecutiveFailures: number; openSince: Date | null; nextProbeAt: Date | null } | null> {
    const { rows } = await this.db.query<{ consecutiveFailures: number; openSince: Date | null; nextProbeAt: Date | null }>(
      `SELECT consecutive_failures AS "consecutiveFailures", open_since AS "openSince", next_probe_at AS "nextProbeAt"
         FROM callback_circuits WHERE merchant_id = $1 AND destination = $2`,
      [merchantId, destination],
    );
    return rows[0] ?? null;
  }

  async deliveriesOfEvent(eventId: string): Promise<DeliveryRow[]> {
    const { rows } = await this.db.query<DeliveryRow>(`SELECT * FROM callback_deliveries WHERE event_id = $1 ORDER BY created_at`, [eventId]);
    return rows;
  }

  async deliveriesOfOrder(orderId: string): Promise<(DeliveryRow & { type: string })[]> {
    const { rows } = await this.db.query<DeliveryRow & { type: string }>(
      `SELECT d.*, e.type FROM callback_deliveries d JOIN order_events e ON e.id = d.event_id WHERE d.order_id = $1 ORDER BY d.event_seq, d.created_at`,
      [orderId],
    );
    return rows;
  }

  async attempts(deliveryId: string): Promise<AttemptRow[]> {
    const { rows } = await this.db.query<AttemptRow>(`SELECT * FROM callback_attempts WHERE delivery_id = $1 ORDER BY number`, [deliveryId]);
    return rows;
  }

  /** The delivery once it has ended (succeeded or failed), else null. */
  async ended(deliveryId: string): Promise<DeliveryRow | null> {
    const row = await this.delivery(deliveryId);
    return row && row.status !== 'pending' ? row : null;
  }

  close(): Promise<void> {
    return this.db.end();
  }
}

/** Deletes this test's own BullMQ keys (its QUEUE_PREFIX), as a Redis flush would; never FLUSHALL a shared Redis. */
export function flushQueueKeys(prefix: string): Promise<number> {
  return removeTestKeys(prefix);
}
