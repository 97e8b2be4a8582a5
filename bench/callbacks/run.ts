import { randomBytes, randomInt } from 'node:crypto';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { NestFactory } from '@nestjs/core';
import { Client } from 'pg';
import { Agent, request } from 'undici';
import { loadConfig, parseNotifyUrl } from '@app/common';
import { deliveryAddressSql, runMigrations } from '@app/db';
import { JobsAfterCommit, OrderLifecycle } from '@app/orders';
import { ChannelSetupService, MerchantAccountService, OperatorModule } from '@app/operator';
import { JobQueue } from '@app/queue';
import { createWorkerApp } from '../../apps/worker/src/create-worker-app';

/**
 * `npm run bench:callbacks`, three measures against one local node:http receiver, at the same
 * concurrency (the worker's callbackConcurrency and CALLBACK_DESTINATION_CONCURRENCY are set
 * to it, the receiver being one destination):
 *  - bare: a loop of undici POSTs of a callback-sized body, no database;
 *  - deliveries alone: N due delivery rows written in one transaction and announced, then
 *    claimed, signed, sent and recorded by an in-process worker until the last arrives;
 *  - pipeline: N orders marked paid through OrderLifecycle (transition, outbox rows, callback
 *    job, confirm job, order.completed), until every order.paid and order.completed arrived;
 *  - the same pipeline with BENCH_BACKLOGS other destinations (each its own host) waiting in the
 *    retry schedule with their delayed jobs: its rate and p50 against the clean run (SPEC 7 Cost).
 * Prints the ratios. Env: BENCH_ORDERS (2000), BENCH_CONCURRENCY (32), BENCH_BACKLOGS
 * (10000,100000), BENCH_POSTGRES_URL, REDIS_URL.
 */
const ORDERS = Number(process.env.BENCH_ORDERS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const POSTGRES = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';
const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/** Other destinations waiting in the retry schedule while the pipeline is measured again (cumulative). */
const BACKLOGS = (process.env.BENCH_BACKLOGS ?? '10000,100000').split(',').map(Number);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

async function main(): Promise<void> {
  const dbName = `mp_bench_callbacks_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: `${POSTGRES}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${dbName}"`);
  const databaseUrl = `${POSTGRES}/${dbName}`;
  await runMigrations(databaseUrl);

  // The receiver: a merchant endpoint that accepts everything; arrival times of order.paid by order_no.
  const paidArrival = new Map<string, number>();
  let received = 0;
  let lastArrival = 0;
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received++;
      lastArrival = performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { event?: string; order_no?: string };
      if (body.event === 'order.paid' && body.order_no) paidArrival.set(body.order_no, lastArrival);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('success');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const notifyUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/notify`;

  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    REDIS_URL: REDIS,
    MASTER_KEY: randomBytes(32).toString('base64'),
    QUEUE_PREFIX: `mp-bench-${randomBytes(4).toString('hex')}`,
    CALLBACK_ALLOW_PRIVATE: 'true',
    CALLBACK_DESTINATION_CONCURRENCY: String(CONCURRENCY),
    SANDBOX_ENABLED: 'true',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'error',
  });
  const cli = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
  const merchants = cli.get(MerchantAccountService);
  const channels = cli.get(ChannelSetupService);
  const merchant = await merchants.create({ name: 'bench', mode: 'test', notifyUrl });
  const { id: channelId } = await channels.create({ category: 'remotepay', name: 'sandbox', payMethod: 'alipay', adapter: 'sandbox' });
  await channels.link(merchant.id, channelId);
  await cli.close();

  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  const insertOrders = async (n: number): Promise<{ id: string; orderNo: string }[]> => {
    const made: { id: string; orderNo: string }[] = [];
    for (let i = 0; i < n; i++) {
      const orderNo = `20251121120000${String(randomInt(0, 99_999_999)).padStart(8, '0')}`;
      const { rows } = await db.query<{ id: string }>(
        `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, cny_fen, service_rate, service_fen, deposit_rate, deposit_fen,
                             merchant_actual_fen, request_hash, expires_at, created_at, updated_at)
         VALUES ($1, $2, $3, 1, 'pending', 10000, 0.006, 60, 0, 0, 9940, $4, now() + interval '1 hour', now(), now()) ON CONFLICT DO NOTHING RETURNING id`,
        [orderNo, merchant.id, channelId, 'x'.repeat(64)],
      );
      if (rows[0]) made.push({ id: String(rows[0].id), orderNo });
    }
    return made;
  };
  const waitUntil = async (done: () => boolean, what: string): Promise<void> => {
    const deadline = Date.now() + 180_000;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };

  // The bare loop first: same receiver, a callback-sized body, same concurrency, no database or queue.
  const body = JSON.stringify({ event_id: 'x'.repeat(36), event: 'bench.bare', order_no: '0'.repeat(22), pad: 'x'.repeat(400) });
  const agent = new Agent({ keepAliveTimeout: 4000 });
  const bareLatencies: number[] = [];
  const bareStarted = performance.now();
  await pool(
    Array.from({ length: ORDERS }, (_, i) => i),
    CONCURRENCY,
    async () => {
      const t = performance.now();
      const res = await request(notifyUrl, { method: 'POST', body, headers: { 'content-type': 'application/json' }, dispatcher: agent });
      await res.body.text();
      bareLatencies.push(performance.now() - t);
    },
  );
  const bareS = (performance.now() - bareStarted) / 1000;
  bareLatencies.sort((a, b) => a - b);
  await agent.close();
  const bare = ORDERS / bareS;

  const worker = await createWorkerApp(config, { shutdownHooks: false, tuning: { callbackConcurrency: CONCURRENCY } });
  const lifecycle = worker.get(OrderLifecycle);
  const afterCommit = worker.get(JobsAfterCommit);

  // Deliveries alone: N due rows (an order.paid event and its delivery each) in one transaction, announced once.
  const alone = await insertOrders(ORDERS);
  received = 0;
  await db.query('BEGIN');
  await db.query(
    `WITH e AS (
       INSERT INTO order_events (id, order_id, merchant_id, type, payload)
       SELECT gen_random_uuid(), o.id, o.merchant_id, 'order.paid',
              jsonb_build_object('order_no', o.order_no, 'merchant_order_no', o.order_no, 'order_type', 1, 'status', 'paid', 'cny_amount', '100.00',
                                 'merchant_actual_amount', 9940, 'service_rate', '0.00600000', 'service_amount', 60, 'createtime', 0, 'updatetime', 0, 'paid_at', 0)
         FROM orders o WHERE o.id = ANY($1::bigint[])
       RETURNING id, order_id, merchant_id, refund_id, seq)
     INSERT INTO callback_deliveries (id, event_id, order_id, merchant_id, status, attempts_made, next_attempt_at, notify_url, event_seq)
     SELECT gen_random_uuid(), e.id, e.order_id, e.merchant_id, 'pending', 0, now(), ${deliveryAddressSql('e')}, e.seq FROM e
     RETURNING id`,
    [alone.map((o) => o.id)],
  );
  const { rows: aloneDeliveries } = await db.query<{ id: string }>(`SELECT d.id FROM callback_deliveries d JOIN orders o ON o.id = d.order_id WHERE o.id = ANY($1::bigint[])`, [
    alone.map((o) => o.id),
  ]);
  const aloneStarted = performance.now();
  await db.query('COMMIT');
  await afterCommit.deliver(aloneDeliveries.map((d) => d.id));
  await waitUntil(() => received >= alone.length, 'the deliveries alone');
  const aloneS = (lastArrival - aloneStarted) / 1000;
  const aloneRate = alone.length / aloneS;

  // The pipeline: notification -> order.paid and order.completed received.
  const pipeline = async (): Promise<{ paidRate: number; allRate: number; latencies: number[] }> => {
    const orders = await insertOrders(ORDERS);
    received = 0;
    paidArrival.clear();
    const paidAt = new Map<string, number>();
    const started = performance.now();
    await pool(orders, CONCURRENCY, async (o) => {
      paidAt.set(o.orderNo, performance.now());
      await lifecycle.markPaid(o.id, { amountFen: 10000, channelTradeNo: `T${o.orderNo}` });
    });
    await waitUntil(() => paidArrival.size >= orders.length, 'every order.paid');
    const lastPaid = Math.max(...paidArrival.values());
    const latencies = orders.filter((o) => paidArrival.has(o.orderNo)).map((o) => paidArrival.get(o.orderNo)! - paidAt.get(o.orderNo)!).sort((a, b) => a - b);
    // order.completed callbacks (the confirm job, then the delivery once order.paid's succeeded) follow.
    await waitUntil(() => received >= orders.length * 2, 'every order.completed');
    return { paidRate: paidArrival.size / ((lastPaid - started) / 1000), allRate: received / ((performance.now() - started) / 1000), latencies };
  };
  const clean = await pipeline();

  // The realistic condition: other merchants' endpoints failing, each delivery to its own host,
  // waiting in the retry schedule (due in an hour) with its delayed job, as a failed attempt leaves it.
  const backlogMerchant = await (async () => {
    const ctx = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
    const m = await ctx.get(MerchantAccountService).create({ name: 'failing', mode: 'test', notifyUrl: 'http://failing.invalid/n' });
    await ctx.get(ChannelSetupService).link(m.id, channelId);
    await ctx.close();
    return m.id;
  })();
  const jobs = worker.get(JobQueue);
  let backlog = 0;
  const growBacklog = async (to: number): Promise<void> => {
    for (; backlog < to; backlog += Math.min(5_000, to - backlog)) {
      const n = Math.min(5_000, to - backlog);
      const { rows } = await db.query<{ id: string; merchant_id: number; notify_url: string }>(
        `WITH o AS (
           INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, cny_fen, service_rate, service_fen, deposit_rate, deposit_fen,
                               merchant_actual_fen, request_hash, notify_url, expires_at, created_at, updated_at)
           SELECT 'B' || lpad(($3 + g)::text, 21, '0'), $1, $2, 1, 'paid', 10000, 0.006, 60, 0, 0, 9940, repeat('x', 64),
                  'http://h' || ($3 + g) || '.failing.invalid/n', now() + interval '1 hour', now(), now()
             FROM generate_series(1, $4) g RETURNING id, merchant_id),
         e AS (
           INSERT INTO order_events (id, order_id, merchant_id, type, payload)
           SELECT gen_random_uuid(), o.id, o.merchant_id, 'order.paid', '{}'::jsonb FROM o RETURNING id, order_id, merchant_id, refund_id, seq)
         INSERT INTO callback_deliveries (id, event_id, order_id, merchant_id, status, attempts_made, next_attempt_at, notify_url, event_seq, last_error)
         SELECT gen_random_uuid(), e.id, e.order_id, e.merchant_id, 'pending', 1, now() + interval '1 hour', ${deliveryAddressSql('e')}, e.seq, 'HTTP 503'
           FROM e RETURNING id, merchant_id, notify_url`,
        [backlogMerchant, channelId, backlog, n],
      );
      // A thousand jobs per call: JobQueue's 2 s enqueue budget is sized for after-commit adds.
      for (let i = 0; i < rows.length; i += 1_000) {
        await jobs.addBulk(
          'callback.deliver',
          rows.slice(i, i + 1_000).map((r) => ({ jobId: r.id, payload: { deliveryId: r.id, merchantId: r.merchant_id, destination: parseNotifyUrl(r.notify_url)?.destination ?? null } })),
          { attempts: 16, delay: 3_600_000 },
        );
      }
    }
  };
  const withBacklog: Record<string, { paidRate: number; allRate: number; latencies: number[] }> = {};
  for (const size of BACKLOGS) {
    await growBacklog(size);
    withBacklog[size] = await pipeline();
  }
  await worker.close();
  const { rows: counts } = await db.query<{ events: string; deliveries: string; attempts: string }>(
    `SELECT (SELECT count(*) FROM order_events) AS events, (SELECT count(*) FROM callback_deliveries) AS deliveries, (SELECT count(*) FROM callback_attempts) AS attempts`,
  );

  const bareP50 = percentile(bareLatencies, 50);
  const cleanP50 = percentile(clean.latencies, 50);
  const result = {
    orders: ORDERS,
    concurrency: CONCURRENCY,
    bare_undici_posts_per_s: Math.round(bare),
    bare_post_ms: { p50: +bareP50.toFixed(2), p99: +percentile(bareLatencies, 99).toFixed(2) },
    deliveries_alone_per_s: Math.round(aloneRate),
    ratio_deliveries_alone_to_bare: +(aloneRate / bare).toFixed(3),
    pipeline_paid_deliveries_per_s: Math.round(clean.paidRate),
    pipeline_all_callbacks_per_s: Math.round(clean.allRate),
    ratio_pipeline_to_bare: +(clean.paidRate / bare).toFixed(3),
    paid_to_received_ms: { p50: Math.round(cleanP50), p99: Math.round(percentile(clean.latencies, 99)) },
    ratio_paid_to_received_p50_to_bare_post_p50: +(cleanP50 / bareP50).toFixed(1),
    // The same pipeline while other destinations wait in the retry schedule: rate and p50 against the clean run.
    with_backlog: Object.fromEntries(
      Object.entries(withBacklog).map(([size, r]) => [
        size,
        {
          paid_deliveries_per_s: Math.round(r.paidRate),
          ratio_rate_to_clean: +(r.paidRate / clean.paidRate).toFixed(3),
          paid_to_received_p50_ms: Math.round(percentile(r.latencies, 50)),
          ratio_p50_to_clean: +(percentile(r.latencies, 50) / cleanP50).toFixed(2),
        },
      ]),
    ),
    rows: counts[0],
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);

  await db.end();
  await new Promise((r) => receiver.close(r));
  await admin.query(`DROP DATABASE "${dbName}" WITH (FORCE)`);
  await admin.end();
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
