import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Queue } from 'bullmq';
import { Client } from 'pg';
import { type AppConfig, QUEUE } from '@app/common';
import { OperatorModule } from '@app/operator';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { QueueWorkers } from '../apps/worker/src/jobs/queue-workers';
import type { RetentionResult } from '../apps/worker/src/retention/retention-sweep';
import { insertAgedOrders } from './helpers/aged-orders';
import { TEST_REDIS_URL, testConfig } from './helpers/config';
import { createTestDatabase } from './helpers/database';
import { removeTestKeys } from './helpers/redis-keys';
import { operatorServices } from './helpers/operator-services';

const BATCH = 500;
const BATCHES_PER_SWEEP = 4;
/** Old, ended, needed by nothing: what retention removes. */
const OLD_ORDERS = 3000;

/** SPEC 10 Retention (issue 29 item 8): the worker's sweep deletes old callback history in batches, and nothing still needed. */
describe('retention of callback history', () => {
  let config: AppConfig;
  let operatorApp: INestApplicationContext;
  let worker: INestApplicationContext;
  let db: Client;
  let merchantId: number;
  let channelId: number;
  let reconciledChannelId: number;
  let nextOrderNo = 1;

  beforeAll(async () => {
    config = testConfig(await createTestDatabase());
    // Paused before the worker starts: its scheduled sweep never runs beside the ones this test runs by hand, and the
    // pending deliveries written here (whose jobs the sweep re-adds) are never sent.
    for (const name of Object.values(QUEUE)) {
      const queue = new Queue(name, { connection: { url: TEST_REDIS_URL }, prefix: config.queuePrefix });
      await queue.pause();
      await queue.close();
    }
    operatorApp = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
    const operator = operatorServices(operatorApp);
    merchantId = (await operator.merchants.create({ name: 'Retention shop', mode: 'test', notifyUrl: 'https://shop.example/notify' })).id;
    channelId = (await operator.channels.create({ category: 'remotepay', name: 'Sandbox', payMethod: 'alipay', adapter: 'sandbox' })).id;
    reconciledChannelId = (await operator.channels.create({ category: 'processor', name: 'Reconciled', payMethod: 'alipay', adapter: 'sandbox' })).id;
    worker = await createWorkerApp(config, { shutdownHooks: false, tuning: { retentionBatch: BATCH, retentionBatchesPerSweep: BATCHES_PER_SWEEP } });
    db = new Client({ connectionString: config.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    await db?.end();
    await worker?.close();
    await operatorApp?.close();
    await removeTestKeys(config.queuePrefix, config.databaseUrl);
  });

  /**
   * `count` orders `ageDays` old, each with an order.paid event and one delivery of `deliveryStatus`
   * with two attempts, all written at that age, generated in a few statements. Answers the order ids.
   */
  async function history(
    count: number,
    ageDays: number,
    options: { deliveryStatus?: string; channel?: number; orderType?: 1 | 2; orderStatus?: string } = {},
  ): Promise<string[]> {
    const firstNo = nextOrderNo;
    nextOrderNo += count;
    const ids = await insertAgedOrders(db, {
      merchantId,
      channelId: options.channel ?? channelId,
      firstNo,
      count,
      ageDays,
      orderType: options.orderType,
      orderStatus: options.orderStatus,
    });
    await db.query(
      `INSERT INTO order_events (id, order_id, merchant_id, type, payload, created_at)
       SELECT gen_random_uuid(), o.id, o.merchant_id, 'order.paid', '{}', o.created_at FROM orders o WHERE o.id = ANY($1::bigint[])`,
      [ids],
    );
    await db.query(
      `INSERT INTO callback_deliveries (id, event_id, order_id, merchant_id, status, attempts_made, next_attempt_at, notify_url, destination, created_at, updated_at)
       SELECT gen_random_uuid(), e.id, e.order_id, e.merchant_id, $2, 2, e.created_at, 'https://shop.example/notify', 'https://shop.example:443', e.created_at, e.created_at
         FROM order_events e WHERE e.order_id = ANY($1::bigint[])`,
      [ids, options.deliveryStatus ?? 'succeeded'],
    );
    await db.query(
      `INSERT INTO callback_attempts (delivery_id, number, attempted_at, http_status, duration_ms)
       SELECT d.id, n, d.created_at, 200, 5 FROM callback_deliveries d CROSS JOIN generate_series(1, 2) n WHERE d.order_id = ANY($1::bigint[])`,
      [ids],
    );
    return ids;
  }

  async function left(ids: string[]): Promise<{ events: number; deliveries: number; attempts: number }> {
    const { rows } = await db.query<{ events: number; deliveries: number; attempts: number }>(
      `SELECT (SELECT count(*)::int FROM order_events WHERE order_id = ANY($1::bigint[])) AS events,
              (SELECT count(*)::int FROM callback_deliveries WHERE order_id = ANY($1::bigint[])) AS deliveries,
              (SELECT count(*)::int FROM callback_attempts a JOIN callback_deliveries d ON d.id = a.delivery_id WHERE d.order_id = ANY($1::bigint[])) AS attempts`,
      [ids],
    );
    return rows[0];
  }

  /** One maintenance sweep as the worker runs it (the 'maintenance.sweep' job's handler). */
  async function sweep(): Promise<RetentionResult> {
    const result = (await worker
      .get(QueueWorkers)
      .handlers()
      ['maintenance.sweep']({}, {} as never)) as { retention: RetentionResult };
    return result.retention;
  }

  it('deletes old ended deliveries, their attempts and their events in bounded batches, and keeps what is recent or still needed', async () => {
    const old = await history(OLD_ORDERS, 100);
    const oldFailed = await history(20, 95, { deliveryStatus: 'failed' });
    const recent = await history(20, 10);
    // An old order whose callback is still pending: its delivery, its attempts and its event stay.
    const pending = await history(1, 100, { deliveryStatus: 'pending' });
    // An old order with a refund still processing, and an old sell order whose payout never settled.
    const refunding = await history(1, 100);
    await db.query(
      `INSERT INTO refunds (refund_no, merchant_id, order_id, order_no, merchant_refund_no, refund_fen, request_hash, status, created_at, updated_at)
       SELECT 'R' || substr(order_no, 2), merchant_id, id, order_no, 'r-1', 100, 'h', 'processing', now(), now() FROM orders WHERE id = $1`,
      [refunding[0]],
    );
    const paying = await history(1, 100, { orderType: 2, orderStatus: 'paid' });
    await db.query(
      `INSERT INTO payouts (order_id, payee_name, payee_account_enc, payee_account_masked, payee_bank, attempted_at) VALUES ($1, 'x', 'sealed', '****1234', 'b', now() - interval '100 days')`,
      [paying[0]],
    );
    // On a channel that is reconciled: a day with its completed run may go, a day without one waits.
    const reconciled = await history(1, 100, { channel: reconciledChannelId });
    const unreconciled = await history(1, 101, { channel: reconciledChannelId });
    await db.query(
      `INSERT INTO recon_runs (channel_id, bill_date, status, bill_format, bill_sha256, bill_raw)
       SELECT $1, (paid_at AT TIME ZONE 'Asia/Shanghai')::date, 'completed', 'sandbox', repeat('a', 64), '\\x'::bytea FROM orders WHERE id = $2`,
      [reconciledChannelId, reconciled[0]],
    );

    // The first sweep stops after its batches: a backlog is worked off over several sweeps, no long transaction.
    const first = await sweep();
    expect(first.batches).toBe(BATCHES_PER_SWEEP);
    expect(first.deliveriesDeleted).toBe(BATCH * BATCHES_PER_SWEEP);
    expect(first.attemptsDeleted).toBe(2 * BATCH * BATCHES_PER_SWEEP);
    const results = [first];
    for (let i = 0; i < 10 && results[results.length - 1].deliveriesDeleted + results[results.length - 1].eventsDeleted > 0; i++) results.push(await sweep());
    const total = (key: keyof RetentionResult): number => results.reduce((sum, r) => sum + r[key], 0);
    expect(results.every((r) => r.batches <= BATCHES_PER_SWEEP)).toBe(true);
    expect(total('deliveriesDeleted')).toBe(OLD_ORDERS + 20 + 1);
    expect(total('eventsDeleted')).toBe(OLD_ORDERS + 20 + 1);
    expect(total('attemptsDeleted')).toBe(2 * (OLD_ORDERS + 20 + 1));

    expect(await left(old)).toEqual({ events: 0, deliveries: 0, attempts: 0 });
    expect(await left(oldFailed)).toEqual({ events: 0, deliveries: 0, attempts: 0 });
    expect(await left(reconciled)).toEqual({ events: 0, deliveries: 0, attempts: 0 });
    for (const kept of [recent, pending, refunding, paying, unreconciled]) {
      expect(await left(kept)).toEqual({ events: kept.length, deliveries: kept.length, attempts: 2 * kept.length });
    }
    // Orders and the ledger are kept whatever their age.
    const { rows } = await db.query<{ count: number }>(`SELECT count(*)::int AS count FROM orders WHERE id = ANY($1::bigint[])`, [old]);
    expect(rows[0].count).toBe(OLD_ORDERS);
  });

  it('drops circuits without traffic for 30 days unless a pending delivery still goes to them', async () => {
    await history(1, 100, { deliveryStatus: 'pending' });
    await db.query(
      `INSERT INTO callback_circuits (merchant_id, destination, consecutive_failures, open_since, updated_at) VALUES
         ($1, 'https://idle.example:443', 3, NULL, now() - interval '31 days'),
         ($1, 'https://shop.example:443', 25, now() - interval '40 days', now() - interval '31 days'),
         ($1, 'https://busy.example:443', 1, NULL, now() - interval '2 days')`,
      [merchantId],
    );
    expect((await sweep()).circuitsDeleted).toBe(1);
    const { rows } = await db.query<{ destination: string }>(`SELECT destination FROM callback_circuits WHERE merchant_id = $1 ORDER BY destination`, [
      merchantId,
    ]);
    expect(rows.map((r) => r.destination)).toEqual(['https://busy.example:443', 'https://shop.example:443']);
  });
});
