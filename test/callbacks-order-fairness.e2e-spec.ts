import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { INestApplicationContext } from '@nestjs/common';
import { CallbackJobs } from '@app/callbacks';
import { OrderLifecycle } from '@app/orders';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { CallbackFixtures, CallbackReceiver, sleep, waitFor } from './helpers/callbacks';

const TUNING = { callbackTimeoutMs: 1000, callbackPollMs: 200, sweepIntervalMs: 500 };
const PROBE_SECONDS = 1;
const PER_DESTINATION = 8;

/** A merchant endpoint that hangs (never answers) or accepts, and counts the requests open at once. */
class SwitchableEndpoint {
  hanging = true;
  inFlight = 0;
  maxInFlight = 0;
  /** Event ids it accepted, in order. */
  readonly accepted: string[] = [];
  private server: Server;

  static async start(): Promise<SwitchableEndpoint> {
    const endpoint = new SwitchableEndpoint();
    endpoint.server = createServer((req, res) => {
      endpoint.inFlight++;
      endpoint.maxInFlight = Math.max(endpoint.maxInFlight, endpoint.inFlight);
      res.on('close', () => endpoint.inFlight--);
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        if (endpoint.hanging) return; // the worker's timeout ends it
        endpoint.accepted.push((JSON.parse(raw) as { event_id: string }).event_id);
        res.end('success');
      });
    });
    await new Promise<void>((done) => endpoint.server.listen(0, '127.0.0.1', done));
    return endpoint;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/notify`;
  }

  get destination(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((done) => this.server.close(done));
  }
}

describe('callbacks: order per order, fairness per destination (SPEC 7)', () => {
  let api: TestApi;
  let workers: INestApplicationContext[];
  let db: CallbackFixtures;

  beforeAll(async () => {
    api = await startTestApi({
      CALLBACK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s,1s,1s',
      CALLBACK_ALLOW_PRIVATE: 'true',
      CALLBACK_CIRCUIT_PROBE_SECONDS: String(PROBE_SECONDS),
      CALLBACK_DESTINATION_CONCURRENCY: String(PER_DESTINATION),
    });
    // Two copies: the order and the limits must hold across workers.
    workers = [
      await createWorkerApp(api.config, { shutdownHooks: false, tuning: TUNING }),
      await createWorkerApp(api.config, { shutdownHooks: false, tuning: TUNING }),
    ];
    db = await CallbackFixtures.connect(api.databaseUrl);
  });

  afterAll(async () => {
    for (const w of workers ?? []) await w.close();
    await db?.close();
    await api?.close();
  });

  it("order.completed arrives only after the third order.paid attempt succeeded; another order's callbacks are not held meanwhile", async () => {
    const receiver = await CallbackReceiver.start();
    try {
      const { merchant, channels } = await merchantWithChannels(api.operator, { notifyUrl: receiver.url });
      const lifecycle = api.app.get(OrderLifecycle);
      const slow = await db.insertOrder(merchant.id, channels.remotepay, { status: 'pending' });
      const other = await db.insertOrder(merchant.id, channels.remotepay, { status: 'pending' });
      let otherPaidAt = 0;
      // The first order's order.paid fails twice; everything else is accepted at once.
      receiver.respond = (c, i) =>
        c.body.order_no === slowNo && c.body.event === 'order.paid' && i < 2 ? { status: 500, body: 'not yet' } : { status: 200, body: 'success' };
      const slowNo = (await db.db.query<{ order_no: string }>(`SELECT order_no FROM orders WHERE id = $1`, [slow.orderId])).rows[0].order_no;

      expect(await lifecycle.markPaid(slow.orderId, { amountFen: 10000, channelTradeNo: 'SBX-SLOW' }, { final: true })).toBe('paid');
      // The second order is paid after the first order.paid attempt failed.
      await waitFor(() => receiver.received.some((c) => c.body.order_no === slowNo), 10_000, 'the first attempt');
      otherPaidAt = Date.now();
      expect(await lifecycle.markPaid(other.orderId, { amountFen: 10000, channelTradeNo: 'SBX-OTHER' }, { final: true })).toBe('paid');

      const settled = async (orderId: string) => {
        const rows = await db.deliveriesOfOrder(orderId);
        return rows.length === 2 && rows.every((r) => r.status === 'succeeded') && rows;
      };
      const slowRows = await waitFor(() => settled(slow.orderId), 20_000, 'both deliveries of the first order');
      const otherRows = await waitFor(() => settled(other.orderId), 20_000, 'both deliveries of the second order');

      const arrivals = (eventId: string) => receiver.forEvent(eventId);
      const [paid, completed] = slowRows.map((r) => arrivals(r.event_id));
      expect(paid.map((c) => c.headers['x-delivery-attempt'])).toEqual(['1', '2', '3']);
      expect(completed).toHaveLength(1);
      // Ordering: the completed event only after the successful third order.paid attempt.
      const paidIndex = receiver.received.indexOf(paid[2]);
      expect(receiver.received.indexOf(completed[0])).toBeGreaterThan(paidIndex);
      // The other order, paid while the first waited for its retries, went through in between.
      const [otherPaid, otherCompleted] = otherRows.map((r) => arrivals(r.event_id)[0]);
      expect(otherPaid.at).toBeGreaterThanOrEqual(otherPaidAt);
      expect(receiver.received.indexOf(otherCompleted)).toBeLessThan(paidIndex);
    } finally {
      await receiver.close();
    }
  }, 60_000);

  it('a hanging destination under 200 deliveries holds no one else; after it recovers each held delivery arrives once, having spent no attempt while the circuit was open', async () => {
    const hung = await SwitchableEndpoint.start();
    const healthy = await CallbackReceiver.start();
    try {
      const a = await merchantWithChannels(api.operator, { notifyUrl: hung.url });
      const b = await merchantWithChannels(api.operator, { notifyUrl: healthy.url });
      const aDeliveries: string[] = [];
      for (let i = 0; i < 200; i++) aDeliveries.push((await db.insertEvent((await db.insertOrder(a.merchant.id, a.channels.remotepay)).orderId)).deliveryId);
      await api.app.get(CallbackJobs).deliver(aDeliveries);

      // B's callbacks keep coming while A hangs and while its circuit is open: each one arrives while A is still held
      // (SPEC 7 / issue 12; how fast, against B alone, is bench:contract-timings' figure).
      const openSince = await (async () => {
        let opened: Date | null = null;
        for (let i = 0; i < 40 || !opened; i++) {
          const { orderId } = await db.insertOrder(b.merchant.id, b.channels.remotepay);
          const { eventId, deliveryId } = await db.insertEvent(orderId);
          await api.app.get(CallbackJobs).deliver(deliveryId);
          await waitFor(() => healthy.forEvent(eventId).length > 0, 10_000, `B's callback ${i} while A hangs`);
          const { rows } = await db.db.query<{ open_since: Date | null }>(
            `SELECT open_since FROM callback_circuits WHERE merchant_id = $1 AND destination = $2`,
            [a.merchant.id, hung.destination],
          );
          opened = rows[0]?.open_since ?? null;
          if (i > 200) throw new Error('the circuit never opened');
        }
        return opened;
      })();
      // Held for a few probe intervals: two probes sent while open (an attempt begun after the circuit opened is one).
      await waitFor(
        async () =>
          (
            await db.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM callback_attempts WHERE delivery_id = ANY($1::uuid[]) AND attempted_at > $2`, [
              aDeliveries,
              openSince,
            ])
          ).rows[0].n >= 2,
        20_000,
        'two probes of the open circuit',
      );
      expect(hung.maxInFlight).toBeLessThanOrEqual(PER_DESTINATION);

      // A recovers: the next probe closes the circuit and the held deliveries go.
      hung.hanging = false;
      const recoveredAt = Date.now();
      await waitFor(
        async () =>
          (
            await db.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM callback_deliveries WHERE id = ANY($1::uuid[]) AND status <> 'succeeded'`, [
              aDeliveries,
            ])
          ).rows[0].n === 0,
        60_000,
        "every one of A's deliveries succeeded",
      );
      // absence check: no late attempt goes over the destination's limit after the last success
      await sleep(500);
      expect(hung.maxInFlight).toBeLessThanOrEqual(PER_DESTINATION);
      const { rows: deliveredEvents } = await db.db.query<{ event_id: string }>(`SELECT event_id FROM callback_deliveries WHERE id = ANY($1::uuid[])`, [
        aDeliveries,
      ]);
      // Each accepted, and a second time only where an attempt the receiver still answered failed on our side
      // (its answer came after the worker's timeout, on a starved machine): at least once, never silently twice.
      expect(new Set(hung.accepted)).toEqual(new Set(deliveredEvents.map((r) => r.event_id)));
      const { rows: lateFailures } = await db.db.query<{ event_id: string; n: number }>(
        `SELECT d.event_id, count(*)::int AS n FROM callback_attempts a JOIN callback_deliveries d ON d.id = a.delivery_id
          WHERE a.delivery_id = ANY($1::uuid[]) AND a.http_status IS DISTINCT FROM 200
            AND a.attempted_at + a.duration_ms * interval '1 millisecond' >= $2
          GROUP BY d.event_id`,
        [aDeliveries, new Date(recoveredAt - 50)],
      );
      const retriedAfterRecovery = new Map(lateFailures.map((r) => [r.event_id, r.n]));
      const acceptances = new Map<string, number>();
      for (const id of hung.accepted) acceptances.set(id, (acceptances.get(id) ?? 0) + 1);
      for (const [id, n] of acceptances) expect({ id, extra: n - 1 }).toEqual({ id, extra: Math.min(n - 1, retriedAfterRecovery.get(id) ?? 0) });

      // The attempt log proves it: while open, only probes (at most one per probe interval) were sent.
      const { rows: closing } = await db.db.query<{ at: Date }>(
        `SELECT min(a.attempted_at) AS at FROM callback_attempts a WHERE a.delivery_id = ANY($1::uuid[]) AND a.http_status = 200`,
        [aDeliveries],
      );
      const closedAt = closing[0].at;
      const { rows: duringOpen } = await db.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM callback_attempts a WHERE a.delivery_id = ANY($1::uuid[]) AND a.attempted_at >= $2 AND a.attempted_at < $3`,
        [aDeliveries, openSince, closedAt],
      );
      const probeSlots = Math.ceil((closedAt.getTime() - openSince.getTime()) / (PROBE_SECONDS * 1000)) + 1;
      expect(duringOpen[0].n).toBeLessThanOrEqual(probeSlots);
      expect(closedAt.getTime()).toBeGreaterThanOrEqual(recoveredAt - 50);
      // Attempts overall: the 20 failures that opened it, those in flight then, the probes, and one success each.
      const { rows: spent } = await db.db.query<{ total: number; max: number }>(
        `SELECT sum(attempts_made)::int AS total, max(attempts_made)::int AS max FROM callback_deliveries WHERE id = ANY($1::uuid[])`,
        [aDeliveries],
      );
      expect(spent[0].total).toBeLessThanOrEqual(200 + 20 + PER_DESTINATION + probeSlots);
      // No delivery used up its schedule (8 attempts) while held.
      expect(spent[0].max).toBeLessThanOrEqual(4);
      const { rows: circuit } = await db.db.query(
        `SELECT consecutive_failures, open_since FROM callback_circuits WHERE merchant_id = $1 AND destination = $2`,
        [a.merchant.id, hung.destination],
      );
      expect(circuit[0]).toEqual({ consecutive_failures: 0, open_since: null });
    } finally {
      await hung.close();
      await healthy.close();
    }
  }, 120_000);
});
