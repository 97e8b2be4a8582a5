import { randomBytes, randomInt } from 'node:crypto';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { NestFactory } from '@nestjs/core';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import { Agent, request } from 'undici';
import { QUEUE, RETRY_POLICY, loadConfig, parseNotifyUrl } from '@app/common';
import { deliveryAddressSql, runMigrations } from '@app/db';
import { CallbackJobs, DestinationGate, addCallbackJobs } from '@app/callbacks';
import { type Credentials, ChannelSetupService, MerchantAccountService, OperatorModule } from '@app/operator';
import { JobQueue } from '@app/queue';
import { createApiApp } from '../../apps/api/src/create-api-app';
import { createWorkerApp } from '../../apps/worker/src/create-worker-app';
import {
  type Child,
  type ProfileRow,
  type ServerCost,
  answerProfile,
  askCost,
  backendCpu,
  backendCpuSpent,
  busyPercent,
  countCosts,
  countHere,
  forkServer,
  machineCpu,
  profileHere,
  profileWhile,
  removeRedisPrefix,
  signedBody,
} from '../support';

/**
 * `npm run bench:callbacks`, three measures against one local node:http receiver in a process of
 * its own (as a merchant's server is: never sharing the worker's or the load's event loop), at the same
 * concurrency (the worker's callbackConcurrency and CALLBACK_DESTINATION_CONCURRENCY are set
 * to it, the receiver being one destination):
 *  - bare: a loop of undici POSTs of a callback-sized body, no database;
 *  - BullMQ's floor: the same POSTs as BullMQ jobs run by a plain Worker (no database, gate or
 *    signing): the part of a delivery's cost that is BullMQ's on this machine;
 *  - deliveries alone: N due delivery rows written in one transaction and announced, then
 *    claimed, signed, sent and recorded by an in-process worker until the last arrives;
 *  - pipeline: the real payment path with the API and the worker each in a process of its own.
 *    N orders made by createOrder over HTTP (not timed); then, CONCURRENCY customers at a time,
 *    each GETs its pay_url's checkout page and submits the page's Pay form as a browser would
 *    (its action, its hidden fields, form-encoded): the sandbox notifies the channel route, the
 *    order is paid (and, where the channel's word is final, settled), callbacks go out. Measured
 *    until every order.paid and order.completed arrived: order.paid per second, and Pay pressed
 *    -> order.paid received per order. For one merchant and for BENCH_MERCHANTS merchants;
 *    with each process's CPU, PostgreSQL queries and Redis commands per order;
 *  - the same pipeline with BENCH_BACKLOGS other destinations (each its own host) waiting in the
 *    retry schedule with their delayed jobs: its rate and p50 against the clean run (SPEC 7 Cost).
 * BENCH_PROFILE=1 adds a run of BENCH_PROFILE_ORDERS per merchant count with the API and the
 * worker CPU-profiled (node:inspector, as --cpu-prof): the functions with the most self time.
 * BENCH_ALONE_PROFILE=1 profiles the deliveries alone in this process (BENCH_CPUPROFILE_HERE=<file> keeps the profile).
 * Prints the ratios. Env: BENCH_ONLY=alone (stop after the deliveries alone, with the worker's
 * CPU per delivery: the worker runs in this process), BENCH_ORDERS (2000), BENCH_CONCURRENCY (32), BENCH_MERCHANTS (20),
 * BENCH_BACKLOGS (10000,100000; empty for none), BENCH_BARE_ROUNDS (5 measured bare loops, the median's rate),
 * BENCH_POSTGRES_URL, REDIS_URL.
 */
const ORDERS = Number(process.env.BENCH_ORDERS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const POSTGRES = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';
const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/** Other destinations waiting in the retry schedule while the pipeline is measured again (cumulative). */
const BACKLOGS = (process.env.BENCH_BACKLOGS ?? '10000,100000').split(',').filter(Boolean).map(Number);
const MERCHANTS = Number(process.env.BENCH_MERCHANTS ?? 20);
const PROFILE = process.env.BENCH_PROFILE === '1';
const PROFILE_ORDERS = Number(process.env.BENCH_PROFILE_ORDERS ?? 600);
/** Deliveries of one other merchant due at once while the pipeline is measured again (0 for none). */
const BURST = Number(process.env.BENCH_BURST ?? 100_000);
/** BENCH_ONLY=alone: the bare loop and the deliveries alone, nothing else (a quick check of the worker's own path). */
const ALONE_ONLY = process.env.BENCH_ONLY === 'alone';
/** BENCH_BARE_ROUNDS (5): measured bare loops; the bare rate is the median round's. */
const BARE_ROUNDS = Math.max(1, Number(process.env.BENCH_BARE_ROUNDS ?? 5));
/** BENCH_ALONE_PROFILE=1: the deliveries alone CPU-profiled (this process is the worker there; the profiler's cost is in the figures). */
const ALONE_PROFILE = process.env.BENCH_ALONE_PROFILE === '1';

/** Milliseconds on a clock every process of the bench shares (the receiver stamps arrivals in its own process). */
function now(): number {
  return performance.timeOrigin + performance.now();
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * A setup step (not measured) asked again when JobQueue's 2 s enqueue budget ran out, or when
 * PostgreSQL chose it as a deadlock's victim (the clean-up after a burst meets the worker's records): on a
 * loaded machine a thousand adds can take longer, and the add goes on in Redis meanwhile (the
 * same job ids are added once, and the gate's enlist and line-up keep a delivery once).
 */
async function setUpAgain(step: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await step();
      return;
    } catch (err) {
      if (attempt >= 5 || !/timed out|deadlock detected/.test((err as Error).message)) throw err;
    }
  }
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
  const startLoad = loadavg().map((l) => +l.toFixed(2));
  const dbName = `mp_bench_callbacks_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: `${POSTGRES}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${dbName}"`);
  const databaseUrl = `${POSTGRES}/${dbName}`;
  await runMigrations(databaseUrl);

  // The receiver: a merchant endpoint that accepts everything, in a process of its own as a merchant's server is.
  const receiver = await Receiver.start();
  const notifyUrl = `http://127.0.0.1:${receiver.port}/notify`;

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: REDIS,
    MASTER_KEY: randomBytes(32).toString('base64'),
    QUEUE_PREFIX: `mp-bench-${randomBytes(4).toString('hex')}`,
    CALLBACK_ALLOW_PRIVATE: 'true',
    CALLBACK_DESTINATION_CONCURRENCY: String(CONCURRENCY),
    SANDBOX_ENABLED: 'true',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'error',
    // Every customer comes from 127.0.0.1 and the load signs as few merchants: no 42900s.
    RATE_LIMIT_MERCHANT_PER_SECOND: '1000000',
    RATE_LIMIT_MERCHANT_BURST: '1000000',
    RATE_LIMIT_IP_PER_SECOND: '1000000',
  };
  const config = loadConfig(env);
  const cli = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
  const merchantAccounts = cli.get(MerchantAccountService);
  const channels = cli.get(ChannelSetupService);
  const merchants: Credentials[] = [];
  for (let i = 0; i < Math.max(1, MERCHANTS); i++) merchants.push(await merchantAccounts.create({ name: `bench-${i}`, mode: 'test', notifyUrl }));
  const merchant = merchants[0];
  const { id: channelId } = await channels.create({ category: 'remotepay', name: 'sandbox', payMethod: 'alipay', adapter: 'sandbox' });
  for (const m of merchants) await channels.link(m.id, channelId);
  await cli.close();

  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  /** What the run made: its database, the receiver, its Redis keys. */
  const cleanUp = async (): Promise<void> => {
    await db.end();
    await receiver.stop();
    await admin.query(`DROP DATABASE "${dbName}" WITH (FORCE)`);
    await admin.end();
    await removeRedisPrefix(env.QUEUE_PREFIX!);
  };
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
  // Every 50 ms: rates and latencies are stamped by the receiver, so a coarser poll changes no
  // figure, and the asking (IPC to the receiver) stays out of the worker's CPU when it runs here.
  const waitUntil = async (done: () => Promise<boolean>, what: string): Promise<void> => {
    const deadline = Date.now() + 300_000;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  /**
   * CPU each process spends over a phase, per item: this process (the bare loop's client, or the
   * in-process worker), the receiver, the bench database's PostgreSQL backends and Redis; and
   * how busy the machine's cores were meanwhile (every process, the neighbours' too).
   */
  const phaseCost = async (): Promise<(items: number) => Promise<PhaseCost>> => {
    const machine = machineCpu();
    const backends = await backendCpu(dbName);
    const receiverMs = (await receiver.status()).cpuMs;
    return async (items) => {
      const spent = backendCpuSpent(backends, await backendCpu(dbName));
      const per = (ms: number): number => +(ms / items).toFixed(3);
      const receiverSpent = (await receiver.status()).cpuMs - receiverMs;
      return {
        this_process: per(spent.loadMs),
        receiver: per(receiverSpent),
        postgres: per(spent.postgresMs),
        redis: per(spent.redisMs),
        total: per(spent.loadMs + receiverSpent + spent.postgresMs + spent.redisMs),
        machine_busy: busyPercent(machine, machineCpu()),
      };
    };
  };

  // The bare loop first: same receiver, a callback-sized body, same concurrency, no database or queue.
  const body = JSON.stringify({ event_id: 'x'.repeat(36), event: 'bench.bare', order_no: '0'.repeat(22), pad: 'x'.repeat(400) });
  const agent = new Agent({ keepAliveTimeout: 4000 });
  const bareLoop = (latencies: number[]): Promise<void> =>
    pool(
      Array.from({ length: ORDERS }, (_, i) => i),
      CONCURRENCY,
      async () => {
        const t = now();
        const res = await request(notifyUrl, { method: 'POST', body, headers: { 'content-type': 'application/json' }, dispatcher: agent });
        await res.body.text();
        latencies.push(now() - t);
      },
    );
  // Once unmeasured: the receiver's and undici's code compiled and the connections open, as they are
  // for the deliveries measured after it (which find the receiver warm). A cold loop measured 2-4x
  // slower here and flattered every ratio to it (RESULTS.md). BENCH_BARE_WARMUP=0 measures it cold.
  if (process.env.BENCH_BARE_WARMUP !== '0') await bareLoop([]);
  // Measured BARE_ROUNDS times, its rate the median round's: one loop of 2,000 POSTs lasts 0.2-0.7 s
  // here and a single one moved by 2x between runs (RESULTS.md); every ratio below is against it.
  const bareLatencies: number[] = [];
  const bareRounds: number[] = [];
  const bareCost = await phaseCost();
  for (let round = 0; round < BARE_ROUNDS; round++) {
    const started = now();
    await bareLoop(bareLatencies);
    bareRounds.push(ORDERS / ((now() - started) / 1000));
  }
  const bareCpu = await bareCost(ORDERS * BARE_ROUNDS);
  bareLatencies.sort((a, b) => a - b);
  const bareP50 = percentile(bareLatencies, 50);
  await agent.close();
  const bare = percentile(
    [...bareRounds].sort((a, b) => a - b),
    50,
  );

  // BullMQ's floor: the same POSTs, each a BullMQ job (added in one addBulk, kept as callback jobs
  // are) run by a plain Worker at the same concurrency: no database, no gate, no signing. What any
  // design where BullMQ is the scheduler pays on this machine before its first line of its own.
  const floorConnection = { url: REDIS, maxRetriesPerRequest: null };
  const floorQueue = new Queue('bench-floor', { connection: floorConnection, prefix: env.QUEUE_PREFIX });
  const floorAgent = new Agent({ keepAliveTimeout: 4000 });
  let floorDone = 0;
  let floorFinished!: () => void;
  const floorAll = new Promise<void>((resolve) => (floorFinished = resolve));
  const floorCost = await phaseCost();
  const floorStarted = now();
  await floorQueue.addBulk(
    Array.from({ length: ORDERS }, (_, i) => ({
      name: 'post',
      data: { n: i },
      opts: { jobId: `floor-${i}`, attempts: 10, removeOnComplete: RETRY_POLICY.delivery.removeOnComplete, removeOnFail: RETRY_POLICY.delivery.removeOnFail },
    })),
  );
  const floorWorker = new Worker(
    'bench-floor',
    async () => {
      const res = await request(notifyUrl, { method: 'POST', body, headers: { 'content-type': 'application/json' }, dispatcher: floorAgent });
      await res.body.text();
      if (++floorDone === ORDERS) floorFinished();
    },
    { connection: floorConnection, prefix: env.QUEUE_PREFIX, concurrency: CONCURRENCY },
  );
  await floorAll;
  const floorS = (now() - floorStarted) / 1000;
  const floorCpu = await floorCost(ORDERS);
  await floorWorker.close();
  await floorQueue.close();
  await floorAgent.close();
  const floor = ORDERS / floorS;

  // Deliveries alone: N due rows (an order.paid event and its delivery each) in one transaction, announced once, to an in-process worker.
  const worker = await createWorkerApp(config, { shutdownHooks: false, tuning: { callbackConcurrency: CONCURRENCY } });
  const afterCommit = worker.get(CallbackJobs);
  // BENCH_AUTOPIPELINING=0: the worker's shared Redis client writes each command apart, as before auto-pipelining (an A/B in one build).
  if (process.env.BENCH_AUTOPIPELINING === '0') worker.get(Redis).options.enableAutoPipelining = false;
  const alone = await insertOrders(ORDERS);
  await receiver.reset();
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
  const { rows: aloneDeliveries } = await db.query<{ id: string }>(
    `SELECT d.id FROM callback_deliveries d JOIN orders o ON o.id = d.order_id WHERE o.id = ANY($1::bigint[])`,
    [alone.map((o) => o.id)],
  );
  await db.query('COMMIT');
  // A live database has statistics (autovacuum analyzes within a minute of a bulk change); this one was
  // made seconds ago, and without them the planner takes the announce's order-head check through the
  // wrong partial index (655 ms against 4 ms for 1,000 ids, RESULTS.md). BENCH_ANALYZE=0 measures the cold case.
  if (process.env.BENCH_ANALYZE !== '0') await db.query('ANALYZE');
  const counted = countHere();
  const aloneCost = await phaseCost();
  const aloneCountsBefore = counted();
  const aloneStarted = now();
  const deliverAlone = async (): Promise<void> => {
    // A thousand per call, as the burst below: CallbackJobs' 2 s enqueue budget is sized for one transaction's few.
    for (let i = 0; i < aloneDeliveries.length; i += 1_000) await afterCommit.deliver(aloneDeliveries.slice(i, i + 1_000).map((d) => d.id));
    await waitUntil(async () => (await receiver.status()).received >= alone.length, 'the deliveries alone');
  };
  const aloneProfile = ALONE_PROFILE ? (await profileHere(deliverAlone)).profile : (await deliverAlone(), undefined);
  const aloneS = ((await receiver.status()).lastArrival - aloneStarted) / 1000;
  const aloneCpu = await aloneCost(alone.length);
  const aloneCounts = counted();
  // This process is the worker here (and the bench's own few reads, counted in).
  const alonePerDelivery = {
    pg_statements: +((aloneCounts.pgQueries - aloneCountsBefore.pgQueries) / alone.length).toFixed(2),
    redis_commands: +((aloneCounts.redisCommands - aloneCountsBefore.redisCommands) / alone.length).toFixed(2),
    redis_writes: +((aloneCounts.redisWrites - aloneCountsBefore.redisWrites) / alone.length).toFixed(2),
    redis_by_name: Object.fromEntries(
      Object.entries(aloneCounts.redisByName)
        .map(([name, n]) => [name, +((n - (aloneCountsBefore.redisByName[name] ?? 0)) / alone.length).toFixed(2)] as const)
        .filter(([, n]) => n >= 0.01)
        .sort((a, b) => b[1] - a[1]),
    ),
  };
  const aloneRate = alone.length / aloneS;
  await worker.close();
  // The loops measured so far, as both outputs (BENCH_ONLY=alone's and the whole run's) print them.
  const aloneFigures = {
    bare_undici_posts_per_s: Math.round(bare),
    bare_rounds_posts_per_s: bareRounds.map(Math.round),
    bare_post_ms: { p50: +bareP50.toFixed(2), p99: +percentile(bareLatencies, 99).toFixed(2) },
    bullmq_floor_posts_per_s: Math.round(floor),
    deliveries_alone_per_s: Math.round(aloneRate),
    ratio_deliveries_alone_to_bare: +(aloneRate / bare).toFixed(3),
    ratio_bullmq_floor_to_bare: +(floor / bare).toFixed(3),
    ratio_deliveries_alone_to_bullmq_floor: +(aloneRate / floor).toFixed(3),
    // Where each one's time goes: CPU per POST / per delivery of every process, and how busy both cores were.
    bare_cpu_ms_per_post: bareCpu,
    bullmq_floor_cpu_ms_per_post: floorCpu,
    deliveries_alone_cpu_ms_per_delivery: aloneCpu,
    deliveries_alone_worker_per_delivery: alonePerDelivery,
    ...(aloneProfile ? { deliveries_alone_profile: aloneProfile } : {}),
  };
  if (ALONE_ONLY) {
    process.stdout.write(`${JSON.stringify({ orders: ORDERS, concurrency: CONCURRENCY, ...aloneFigures }, null, 2)}\n`);
    return cleanUp();
  }

  // The pipeline's processes: the API the customers press Pay on, the worker that sends the callbacks.
  const api = await forkServer(__filename, 'api', env);
  const workerProcess = await forkServer(__filename, 'worker', env);
  const apiUrl = `http://127.0.0.1:${api.port}`;
  const customers = new Agent({ keepAliveTimeout: 4000, connections: CONCURRENCY });

  /** createOrder over HTTP, as the merchants' servers call it: the pay_urls to open. */
  const createOrders = async (n: number, payers: Credentials[]): Promise<{ orderNo: string; payPath: string }[]> => {
    const made: { orderNo: string; payPath: string }[] = [];
    let turn = 0;
    await pool(
      Array.from({ length: n }, (_, i) => i),
      CONCURRENCY,
      async () => {
        const payer = payers[turn++ % payers.length];
        // Setup, not measured: on a machine this loaded the API's pool can time out, so ask again.
        let answer: { code: number; data?: { order_no: string; pay_url: string } } = { code: 0 };
        for (let attempt = 0; attempt < 5 && answer.code !== 1; attempt++) {
          const res = await request(`${apiUrl}/api/merchant/createOrder`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: signedBody(payer, { order_type: 1, cny_amount: '100.00', paychannel_id: channelId, paychannel_paymethod: 'alipay' }),
            dispatcher: customers,
          });
          answer = (await res.body.json()) as typeof answer;
        }
        if (answer.code !== 1 || !answer.data) throw new Error(`bench: createOrder answered ${JSON.stringify(answer)}`);
        const url = new URL(answer.data.pay_url);
        made.push({ orderNo: answer.data.order_no, payPath: `${url.pathname}${url.search}` });
      },
    );
    return made;
  };

  /** A customer: opens the checkout page, then submits its Pay form exactly as the page says. Answers when Pay was pressed. */
  const pressPay = async (payPath: string): Promise<{ pressed: number; answered: number }> => {
    const page = await request(`${apiUrl}${payPath}`, { method: 'GET', headers: { accept: 'text/html', 'accept-language': 'en' }, dispatcher: customers });
    const html = await page.body.text();
    if (page.statusCode !== 200) throw new Error(`bench: checkout page answered ${page.statusCode}`);
    const form = /<form method="post" action="([^"]*\/pay[^"]*)">([\s\S]*?)<\/form>/.exec(html);
    if (!form) throw new Error('bench: the checkout page has no Pay form');
    const unescape = (t: string): string =>
      t
        .replace(/&quot;/g, '"')
        .replace(/&#39;/g, "'")
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&amp;/g, '&');
    const fields = new URLSearchParams();
    for (const input of form[2].matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) fields.append(unescape(input[1]), unescape(input[2]));
    const pressed = now();
    const res = await request(new URL(unescape(form[1]), apiUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', 'accept-language': 'en', origin: apiUrl },
      body: fields.toString(),
      dispatcher: customers,
    });
    const answer = await res.body.text();
    if (res.statusCode !== 200 || !answer.includes('Payment succeeded')) throw new Error(`bench: Pay answered ${res.statusCode}`);
    return { pressed, answered: now() };
  };

  interface PipelineRun {
    paidRate: number;
    allRate: number;
    latencies: number[];
    /** Pay pressed -> the page's answer (the API's part: the notification handled, the job added). */
    answerLatencies: number[];
    perOrder: { api: ServerCost; worker: ServerCost };
    /** CPU per paid order of every process (this one holds the customers), and how busy the cores were. */
    cpuPerOrder: PhaseCost;
    loadAverage: number[];
    profile?: { api: ProfileRow[]; worker: ProfileRow[] };
  }
  const costDelta = (after: ServerCost, before: ServerCost, n: number): ServerCost => ({
    requests: +((after.requests - before.requests) / n).toFixed(2),
    cpuMs: +((after.cpuMs - before.cpuMs) / n).toFixed(2),
    pgQueries: +((after.pgQueries - before.pgQueries) / n).toFixed(2),
    redisCommands: +((after.redisCommands - before.redisCommands) / n).toFixed(2),
  });
  /** Pay pressed on every order -> order.paid and order.completed received; `profile` samples both processes meanwhile. */
  const pipeline = async (n: number, payers: Credentials[], profile = false): Promise<PipelineRun> => {
    const orders = await createOrders(n, payers);
    await receiver.reset();
    const paidAt = new Map<string, number>();
    const answerLatencies: number[] = [];
    const before = { api: await askCost(api.child), worker: await askCost(workerProcess.child) };
    const cost = await phaseCost();
    const started = now();
    const run = async (): Promise<void> => {
      await pool(orders, CONCURRENCY, async (o) => {
        const { pressed, answered } = await pressPay(o.payPath);
        paidAt.set(o.orderNo, pressed);
        answerLatencies.push(answered - pressed);
      });
      await waitUntil(async () => (await receiver.status()).paid >= orders.length, 'every order.paid');
      // order.completed follows each order.paid delivery's success (SPEC 7 Order).
      await waitUntil(async () => (await receiver.status()).received >= orders.length * 2, 'every order.completed');
    };
    let profiled: PipelineRun['profile'];
    if (profile) {
      let workerRows: ProfileRow[] = [];
      const apiRows = await profileWhile(api.child, async () => {
        workerRows = await profileWhile(workerProcess.child, run);
      });
      profiled = { api: apiRows, worker: workerRows };
    } else {
      await run();
    }
    const finished = now();
    const cpuPerOrder = await cost(orders.length);
    const after = { api: await askCost(api.child), worker: await askCost(workerProcess.child) };
    const { received } = await receiver.status();
    const paidArrival = await receiver.paidArrivals();
    const lastPaid = Math.max(...paidArrival.values());
    const latencies = orders
      .filter((o) => paidArrival.has(o.orderNo))
      .map((o) => paidArrival.get(o.orderNo)! - paidAt.get(o.orderNo)!)
      .sort((a, b) => a - b);
    return {
      paidRate: paidArrival.size / ((lastPaid - started) / 1000),
      allRate: received / ((finished - started) / 1000),
      latencies,
      answerLatencies: answerLatencies.sort((a, b) => a - b),
      perOrder: { api: costDelta(after.api, before.api, orders.length), worker: costDelta(after.worker, before.worker, orders.length) },
      cpuPerOrder: {
        ...cpuPerOrder,
        total: +(cpuPerOrder.total + (after.api.cpuMs - before.api.cpuMs + after.worker.cpuMs - before.worker.cpuMs) / orders.length).toFixed(3),
      },
      loadAverage: loadavg().map((l) => +l.toFixed(2)),
      profile: profiled,
    };
  };
  const clean = await pipeline(ORDERS, [merchant]);
  const many = await pipeline(ORDERS, merchants);
  const profiles = PROFILE
    ? { one_merchant: (await pipeline(PROFILE_ORDERS, [merchant], true)).profile, many_merchants: (await pipeline(PROFILE_ORDERS, merchants, true)).profile }
    : undefined;

  // The realistic condition: other merchants' endpoints failing, each delivery to its own host,
  // waiting in the retry schedule (due in an hour) with its delayed job, as a failed attempt leaves it.
  const queues = await NestFactory.createApplicationContext(OperatorModule.forRoot(config, { queues: true }), { logger: false });
  const backlogMerchant = await (async () => {
    const m = await queues.get(MerchantAccountService).create({ name: 'failing', mode: 'test', notifyUrl: 'http://failing.invalid/n' });
    await queues.get(ChannelSetupService).link(m.id, channelId);
    return m.id;
  })();
  const jobs = queues.get(JobQueue);
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
             FROM generate_series(1, $4) g RETURNING id, merchant_id, notify_url),
         e AS (
           INSERT INTO order_events (id, order_id, merchant_id, type, payload)
           SELECT gen_random_uuid(), o.id, o.merchant_id, 'order.paid', '{}'::jsonb FROM o RETURNING id, order_id, merchant_id, refund_id, seq)
         INSERT INTO callback_deliveries (id, event_id, order_id, merchant_id, status, attempts_made, next_attempt_at, notify_url, event_seq, last_error)
         SELECT gen_random_uuid(), e.id, e.order_id, e.merchant_id, 'pending', 1, now() + interval '1 hour', o.notify_url, e.seq, 'HTTP 503'
           FROM e JOIN o ON o.id = e.order_id RETURNING id, merchant_id, notify_url`,
        [backlogMerchant, channelId, backlog, n],
      );
      // A thousand jobs per call: JobQueue's 2 s enqueue budget is sized for after-commit adds.
      for (let i = 0; i < rows.length; i += 1_000) {
        await setUpAgain(() =>
          jobs.addBulk(
            'callback.deliver',
            rows.slice(i, i + 1_000).map((r) => ({
              jobId: r.id,
              payload: { deliveryId: r.id, merchantId: r.merchant_id, destination: parseNotifyUrl(r.notify_url)?.destination ?? null },
            })),
            { attempts: 16, delay: 3_600_000 },
          ),
        );
      }
    }
  };
  const withBacklog: Record<string, PipelineRun> = {};
  for (const size of BACKLOGS) {
    await growBacklog(size);
    withBacklog[size] = await pipeline(ORDERS, [merchant]);
  }
  // SPEC 7 Fairness on due work: BURST deliveries of one other merchant due at once (a mass expiry, a
  // recover), its endpoint slow (200 ms, then success) or failing (500 at once), while the first
  // merchant's customers press Pay: its rate and p50 against the clean run.
  const dueBurst: Record<string, PipelineRun & { burstSent: number }> = {};
  if (BURST > 0) {
    const gate = queues.get(DestinationGate);
    const callbacks = jobs.queue(QUEUE.callbacks);
    // The backlog's jobs (due in an hour) are done with: cleared so each burst starts alone.
    await callbacks.clean(0, 1_000_000, 'delayed');
    for (const mode of ['slow', 'failing'] as const) {
      const burstMerchant = await queues.get(MerchantAccountService).create({ name: `burst-${mode}`, mode: 'test', notifyUrl: `${receiver.base}/${mode}` });
      await queues.get(ChannelSetupService).link(burstMerchant.id, channelId);
      const sentBefore = (await receiver.status()).burst;
      for (let made = 0; made < BURST; made += 5_000) {
        const n = Math.min(5_000, BURST - made);
        const { rows } = await db.query<{ id: string; merchant_id: number; notify_url: string }>(
          `WITH o AS (
             INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, cny_fen, service_rate, service_fen, deposit_rate, deposit_fen,
                                 merchant_actual_fen, request_hash, expires_at, created_at, updated_at)
             SELECT $5 || lpad(($3 + g)::text, 21, '0'), $1, $2, 1, 'cancelled', 10000, 0.006, 60, 0, 0, 9940, repeat('x', 64), now(), now(), now()
               FROM generate_series(1, $4) g RETURNING id, merchant_id),
           e AS (
             INSERT INTO order_events (id, order_id, merchant_id, type, payload)
             SELECT gen_random_uuid(), o.id, o.merchant_id, 'order.cancelled', jsonb_build_object('order_no', 'burst', 'status', 'cancelled') FROM o
             RETURNING id, order_id, merchant_id, refund_id, seq)
           INSERT INTO callback_deliveries (id, event_id, order_id, merchant_id, status, attempts_made, next_attempt_at, notify_url, event_seq)
           SELECT gen_random_uuid(), e.id, e.order_id, e.merchant_id, 'pending', 0, now(), $6, e.seq FROM e
           RETURNING id, merchant_id AS "merchantId", notify_url AS "notifyUrl"`,
          // The merchant's address, as deliveryAddressSql resolves it: the orders this statement writes are not visible to its subquery.
          [burstMerchant.id, channelId, made, n, mode === 'slow' ? 'S' : 'F', `${receiver.base}/${mode}`],
        );
        // As CallbackJobs announces them: each admitted by its key or lined up behind it.
        for (let i = 0; i < rows.length; i += 1_000)
          await setUpAgain(() => addCallbackJobs(gate, jobs, rows.slice(i, i + 1_000) as unknown as Parameters<typeof addCallbackJobs>[2], 16));
      }
      if (process.env.BENCH_DEBUG) process.stderr.write(`burst ${mode}: ${JSON.stringify(await callbacks.getJobCounts())}\n`);
      const run = await pipeline(ORDERS, [merchant]);
      if (process.env.BENCH_DEBUG)
        process.stderr.write(`burst ${mode} after: ${JSON.stringify(await callbacks.getJobCounts())} ${JSON.stringify(await receiver.status())}\n`);
      dueBurst[mode] = { ...run, burstSent: (await receiver.status()).burst - sentBefore };
      // The burst is over for the next measure: its rows settled, its parked jobs cleared.
      // The worker still records the burst's attempts in flight meanwhile (rows locked in another order): a deadlock's victim asks again.
      await setUpAgain(() => db.query(`UPDATE callback_deliveries SET status = 'failed' WHERE merchant_id = $1 AND status = 'pending'`, [burstMerchant.id]));
      await callbacks.clean(0, 1_000_000, 'delayed');
    }
  }
  await queues.close();
  await customers.close();
  await Promise.all([api.stop(), workerProcess.stop()]);
  const { rows: counts } = await db.query<{ events: string; deliveries: string; attempts: string }>(
    `SELECT (SELECT count(*) FROM order_events) AS events, (SELECT count(*) FROM callback_deliveries) AS deliveries, (SELECT count(*) FROM callback_attempts) AS attempts`,
  );

  const cleanP50 = percentile(clean.latencies, 50);
  const summary = (r: PipelineRun) => ({
    paid_deliveries_per_s: Math.round(r.paidRate),
    all_callbacks_per_s: Math.round(r.allRate),
    ratio_to_bare: +(r.paidRate / bare).toFixed(3),
    pay_pressed_to_paid_received_ms: { p50: Math.round(percentile(r.latencies, 50)), p99: Math.round(percentile(r.latencies, 99)) },
    ratio_p50_to_bare_post_p50: +(percentile(r.latencies, 50) / bareP50).toFixed(1),
    pay_pressed_to_page_answer_ms: { p50: Math.round(percentile(r.answerLatencies, 50)), p99: Math.round(percentile(r.answerLatencies, 99)) },
    per_order: r.perOrder,
    // this_process is the customers' load; total adds the API's and the worker's CPU (per_order).
    cpu_ms_per_order: r.cpuPerOrder,
    load_average_after: r.loadAverage,
  });
  const result = {
    orders: ORDERS,
    concurrency: CONCURRENCY,
    load_average_at_start: startLoad,
    ...aloneFigures,
    // Customers pressing Pay on the sandbox checkout page, the API and the worker in processes of their own.
    pipeline_one_merchant: summary(clean),
    [`pipeline_${merchants.length}_merchants`]: summary(many),
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
    // One other merchant's BURST deliveries due at once (its endpoint slow, or failing): the first merchant's Pay pipeline against the clean run.
    due_burst: Object.fromEntries(
      Object.entries(dueBurst).map(([mode, r]) => [
        mode,
        {
          burst: BURST,
          burst_attempts_meanwhile: r.burstSent,
          paid_deliveries_per_s: Math.round(r.paidRate),
          ratio_rate_to_clean: +(r.paidRate / clean.paidRate).toFixed(3),
          paid_to_received_p50_ms: Math.round(percentile(r.latencies, 50)),
          ratio_p50_to_clean: +(percentile(r.latencies, 50) / cleanP50).toFixed(2),
          per_order: r.perOrder,
        },
      ]),
    ),
    rows: counts[0],
    ...(profiles ? { profiles } : {}),
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);

  await cleanUp();
}

/** The API in a process of its own, profiled and counted on the parent's asking. */
async function serveApi(): Promise<void> {
  // A parent that failed leaves no server behind.
  process.once('disconnect', () => process.exit(0));
  answerProfile(20);
  const counter = countCosts();
  const app = await createApiApp(loadConfig(process.env));
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onRequest', async () => counter.request());
  await app.listen({ port: 0, host: '127.0.0.1' });
  process.send!({ port: (app.getHttpServer().address() as AddressInfo).port });
}

/** The worker likewise: its BullMQ workers send the callbacks and run the confirm jobs. */
async function serveWorker(): Promise<void> {
  process.once('disconnect', () => process.exit(0));
  answerProfile(20);
  countCosts();
  // Twice one key's slots (production: 64 and 8): one busy merchant's key can never take every attempt in flight.
  await createWorkerApp(loadConfig(process.env), { tuning: { callbackConcurrency: 2 * CONCURRENCY } });
  process.send!({ port: 0 });
}

type ReceiverQuestion = 'reset' | 'status' | 'paid';
interface ReceiverStatus {
  received: number;
  /** POSTs to /slow and /failing (another merchant's burst), counted apart. */
  burst: number;
  lastArrival: number;
  paid: number;
  /** The receiver process's CPU so far. */
  cpuMs: number;
}

interface PhaseCost {
  this_process: number;
  receiver: number;
  postgres: number;
  redis: number;
  total: number;
  machine_busy: string;
}

/**
 * The merchants' endpoint in its own process (a merchant's server is never in our worker's):
 * answers every POST 200 `success`, counts arrivals and stamps each order.paid by order_no.
 */
class Receiver {
  private constructor(private readonly server: Child) {}

  static async start(): Promise<Receiver> {
    return new Receiver(await forkServer(__filename, 'receiver', process.env));
  }

  get port(): number {
    return this.server.port;
  }

  get base(): string {
    return `http://127.0.0.1:${this.server.port}`;
  }

  async reset(): Promise<void> {
    await this.ask('reset');
  }

  status(): Promise<ReceiverStatus> {
    return this.ask('status') as Promise<ReceiverStatus>;
  }

  async paidArrivals(): Promise<Map<string, number>> {
    return new Map((await this.ask('paid')) as [string, number][]);
  }

  stop(): Promise<void> {
    return this.server.stop();
  }

  private ask(question: ReceiverQuestion): Promise<unknown> {
    return new Promise((resolve) => {
      this.server.child.once('message', (m: { answer: unknown }) => resolve(m.answer));
      this.server.child.send({ question });
    });
  }
}

function serveReceiver(): void {
  process.once('disconnect', () => process.exit(0));
  const paid = new Map<string, number>();
  let received = 0;
  let burst = 0;
  let lastArrival = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/slow' || req.url === '/failing') {
        burst++;
        if (req.url === '/failing') res.writeHead(500).end('down');
        else setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('success'), 200);
        return;
      }
      received++;
      lastArrival = now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { event?: string; order_no?: string };
      if (body.event === 'order.paid' && body.order_no) paid.set(body.order_no, lastArrival);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('success');
    });
  });
  process.on('message', ({ question }: { question: ReceiverQuestion }) => {
    if (question === 'reset') {
      received = 0;
      lastArrival = 0;
      paid.clear();
      process.send!({ answer: null });
    } else if (question === 'status') {
      const cpu = process.cpuUsage();
      process.send!({ answer: { received, burst, lastArrival, paid: paid.size, cpuMs: (cpu.user + cpu.system) / 1000 } satisfies ReceiverStatus });
    } else process.send!({ answer: [...paid] });
  });
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
}

const role = process.argv[2];
if (role === 'receiver') serveReceiver();
else if (role === 'api') void serveApi();
else if (role === 'worker') void serveWorker();
else
  main().catch((err) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  });
