import { randomBytes, randomInt } from 'node:crypto';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { NestFactory } from '@nestjs/core';
import { Client } from 'pg';
import { Agent, request } from 'undici';
import { loadConfig } from '@app/common';
import { runMigrations } from '@app/db';
import { OrderLifecycle } from '@app/orders';
import { OperatorModule, OperatorService } from '@app/operator';
import { createWorkerApp } from '../../apps/worker/src/create-worker-app';

/**
 * `npm run bench:callbacks`: N orders marked paid through OrderLifecycle (the real transition,
 * outbox rows and enqueue), delivered by an in-process worker to a local node:http receiver.
 * Beside it, a bare loop of undici POSTs of the same bytes to the same receiver at the same
 * concurrency. Env: BENCH_ORDERS (2000), BENCH_CONCURRENCY (32), BENCH_POSTGRES_URL, REDIS_URL.
 */
const ORDERS = Number(process.env.BENCH_ORDERS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const POSTGRES = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';
const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

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
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received++;
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { event?: string; order_no?: string };
      if (body.event === 'order.paid' && body.order_no) paidArrival.set(body.order_no, performance.now());
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
    SANDBOX_ENABLED: 'true',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'error',
  });
  const cli = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
  const operator = cli.get(OperatorService);
  const merchant = await operator.createMerchant({ name: 'bench', mode: 'test', notifyUrl });
  const { id: channelId } = await operator.createChannel({ category: 'remotepay', name: 'sandbox', payMethod: 'alipay', adapter: 'sandbox' });
  await operator.link(merchant.id, channelId);
  await cli.close();

  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  const orders: { id: string; orderNo: string }[] = [];
  for (let i = 0; i < ORDERS; i++) {
    const orderNo = `20251121120000${String(randomInt(0, 99_999_999)).padStart(8, '0')}`;
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, cny_fen, service_rate, service_fen, deposit_rate, deposit_fen,
                           merchant_actual_fen, request_hash, expires_at, created_at, updated_at)
       VALUES ($1, $2, $3, 1, 'pending', 10000, 0.006, 60, 0, 0, 9940, $4, now() + interval '1 hour', now(), now()) ON CONFLICT DO NOTHING RETURNING id`,
      [orderNo, merchant.id, channelId, 'x'.repeat(64)],
    );
    if (rows[0]) orders.push({ id: String(rows[0].id), orderNo });
  }

  const worker = await createWorkerApp(config, { shutdownHooks: false });
  const lifecycle = worker.get(OrderLifecycle);
  const paidAt = new Map<string, number>();
  const started = performance.now();
  await pool(orders, CONCURRENCY, async (o) => {
    paidAt.set(o.orderNo, performance.now());
    await lifecycle.markPaid(o.id, { amountFen: 10000, channelTradeNo: `T${o.orderNo}` });
  });
  const deadline = Date.now() + 120_000;
  while (paidArrival.size < orders.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const lastPaid = Math.max(...paidArrival.values());
  const elapsedS = (lastPaid - started) / 1000;
  const latencies = orders.filter((o) => paidArrival.has(o.orderNo)).map((o) => paidArrival.get(o.orderNo)! - paidAt.get(o.orderNo)!).sort((a, b) => a - b);
  // order.completed callbacks (the confirm job) run concurrently: let them finish before the bare loop.
  while (received < orders.length * 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const allCallbacks = received;
  const allS = (performance.now() - started) / 1000;
  await worker.close();
  const { rows: counts } = await db.query<{ events: string; deliveries: string; attempts: string }>(
    `SELECT (SELECT count(*) FROM order_events) AS events, (SELECT count(*) FROM callback_deliveries) AS deliveries, (SELECT count(*) FROM callback_attempts) AS attempts`,
  );

  // The bare loop: same receiver, same body size, same concurrency, no database or queue.
  const body = JSON.stringify({ event_id: 'x'.repeat(36), event: 'bench.bare', order_no: '0'.repeat(22), pad: 'x'.repeat(400) });
  const agent = new Agent({ keepAliveTimeout: 4000 });
  const bareLatencies: number[] = [];
  const bareStarted = performance.now();
  await pool(
    Array.from({ length: orders.length }, (_, i) => i),
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

  const ours = paidArrival.size / elapsedS;
  const bare = orders.length / bareS;
  const result = {
    orders: orders.length,
    delivered_paid: paidArrival.size,
    concurrency: CONCURRENCY,
    worker_deliveries_per_s: Math.round(ours),
    all_callbacks: allCallbacks,
    rows: counts[0],
    all_callbacks_per_s: Math.round(allCallbacks / allS),
    paid_to_received_ms: { p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)) },
    bare_undici_posts_per_s: Math.round(bare),
    bare_post_ms: { p50: +percentile(bareLatencies, 50).toFixed(2), p99: +percentile(bareLatencies, 99).toFixed(2) },
    ratio_worker_to_bare: +(ours / bare).toFixed(3),
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
