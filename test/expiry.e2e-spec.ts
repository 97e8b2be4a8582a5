import type { INestApplicationContext } from '@nestjs/common';
import { OrderLifecycle } from '@app/orders';
import type { Credentials } from '@app/operator';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { flushQueueKeys, waitFor } from './helpers/callbacks';
import { createOrder, eventsOf, orderRow, sql } from './helpers/orders';

const OVERDUE = 1200;

describe('order expiry: the workers cancel overdue orders in batches, no job per order (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let workers: INestApplicationContext[];
  let merchant: Credentials;
  let channelId: number;

  beforeAll(async () => {
    api = await startTestApi();
    const fixture = await merchantWithChannels(api.operator);
    merchant = fixture.merchant;
    channelId = fixture.channels.processor;
    // Two copies, as in production, each with its own expiry loop.
    workers = [
      await createWorkerApp(api.config, { shutdownHooks: false, tuning: { expiryIntervalMs: 100 } }),
      await createWorkerApp(api.config, { shutdownHooks: false, tuning: { expiryIntervalMs: 100 } }),
    ];
  });

  afterAll(async () => {
    for (const w of workers ?? []) await w.close();
    await api?.close();
    if (api) await flushQueueKeys(api.config.queuePrefix);
  });

  it('cancels an order once its time ran out, by itself, and not before', async () => {
    const created = await createOrder(api.app, merchant, { cny_amount: '5.00', paychannel_id: channelId });
    expect(created.body.code).toBe(1);
    const orderNo = created.body.data.order_no;
    await sql(api.app).query(`UPDATE "orders" SET "expires_at" = now() + interval '1500 milliseconds' WHERE "order_no" = $1`, [orderNo]);
    // absence check: not cancelled before its expires_at, 1.5 s away
    await new Promise((r) => setTimeout(r, 500));
    expect((await orderRow(api.app, orderNo)).status).toBe('pending');
    await waitFor(async () => (await orderRow(api.app, orderNo)).status === 'cancelled', 10_000, 'the order expired');
    expect((await eventsOf(api.app, orderNo)).map((e) => e.type)).toEqual(['order.cancelled']);
  });

  it('two workers and many overdue orders: each order is cancelled once, with one order.cancelled event and one delivery', async () => {
    const db = sql(api.app);
    const before = Number((await db.query(`SELECT count(*) AS n FROM "orders"`))[0].n);
    await db.query(
      `INSERT INTO "orders" ("order_no", "merchant_id", "channel_id", "order_type", "status", "payment_method", "cny_fen", "service_rate", "service_fen",
                             "deposit_rate", "deposit_fen", "merchant_actual_fen", "request_hash", "expires_at", "created_at", "updated_at")
       SELECT '2099' || lpad(g::text, 18, '0'), $1, $2, 1, 'pending', 'alipay', 1000, 0.006, 6, 0, 0, 994, repeat('x', 64),
              now() - interval '1 minute', now() - interval '31 minutes', now() - interval '31 minutes'
         FROM generate_series(1, ${OVERDUE}) g`,
      [merchant.id, channelId],
    );
    // Besides the two loops, passes of both workers at once, so batches certainly overlap.
    const lifecycles = workers.map((w) => w.get(OrderLifecycle));
    const expired = await Promise.all(Array.from({ length: 8 }, (_, i) => lifecycles[i % 2].expireOverdue(100)));
    expect(expired.every((n) => n >= 0)).toBe(true);
    await waitFor(
      async () => Number((await db.query(`SELECT count(*) AS n FROM "orders" WHERE "order_no" LIKE '2099%' AND "status" = 'pending'`))[0].n) === 0,
      20_000,
      'every overdue order cancelled',
    );

    const perOrder: { events: number; cancelled: number; deliveries: number }[] = await db.query(
      `SELECT (SELECT count(*)::int FROM "order_events" e WHERE e."order_id" = o."id") AS events,
              (SELECT count(*)::int FROM "order_events" e WHERE e."order_id" = o."id" AND e."type" = 'order.cancelled') AS cancelled,
              (SELECT count(*)::int FROM "callback_deliveries" d WHERE d."order_id" = o."id") AS deliveries
         FROM "orders" o WHERE o."order_no" LIKE '2099%'`,
    );
    expect(perOrder).toHaveLength(OVERDUE);
    expect(perOrder.filter((o) => o.events !== 1 || o.cancelled !== 1 || o.deliveries !== 1)).toEqual([]);
    // The event carries the order as cancelled, at its transition's time.
    const [sample] = await db.query(
      `SELECT e."payload", o."updated_at" FROM "order_events" e JOIN "orders" o ON o."id" = e."order_id" WHERE o."order_no" = '2099' || lpad('7', 18, '0')`,
    );
    expect(sample.payload).toMatchObject({ event: 'order.cancelled', status: 'cancelled', order_no: `2099${'7'.padStart(18, '0')}`, cny_amount: '10.00' });
    expect(sample.payload.updatetime).toBe(Math.floor(new Date(sample.updated_at).getTime() / 1000));
    // The per-status counters (order_counts triggers) moved once per order too.
    const counts: { status: string; n: string }[] = await db.query(`SELECT "status", sum("n")::text AS n FROM "order_counts" GROUP BY 1 ORDER BY 1`);
    const actual: { status: string; n: string }[] = await db.query(`SELECT "status", count(*)::text AS n FROM "orders" GROUP BY 1 ORDER BY 1`);
    expect(counts.filter((c) => c.n !== '0')).toEqual(actual);
    expect(Number((await db.query(`SELECT count(*) AS n FROM "orders"`))[0].n)).toBe(before + OVERDUE);
  }, 60_000);
});
