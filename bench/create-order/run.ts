import { type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { Client, Pool } from 'pg';
import { DataSource } from 'typeorm';
import { loadConfig } from '@app/common';
import { dataSourceOptions } from '@app/db';
import { verify } from '@app/signature';
import { createApiApp } from '../../apps/api/src/create-api-app';
import { OrderCountSlots1764410000000 } from '../../migrations/1764410000000-order-count-slots';
import {
  type LoadResult,
  REDIS,
  type ServerCost,
  answerProfile,
  answerRss,
  askCost,
  backendCpu,
  backendCpuSpent,
  benchDatabase,
  busyPercent,
  countCosts,
  fmt,
  forkServer,
  machineCpu,
  profileWhile,
  removeRedisPrefix,
  signedBody,
  signedLoad,
} from '../support';

/**
 * `npm run bench` (or node dist/bench/create-order/run.js): createOrder end to end (signed, a
 * fresh nonce per request, real PostgreSQL and Redis, the sandbox channel) for one merchant and
 * spread over 100, against bare node:http servers doing the least the same request needs: parse
 * the JSON, verify the same HMAC, SET NX the nonce in Redis, INSERT one comparable order row,
 * answer. The bare server that sets the goal writes into a lean table (primary key, unique
 * order_no, nothing else), so it shares none of the orders table's costs (triggers, foreign
 * keys, indexes); a second bare server writes into orders itself, to show what the table costs.
 * Then two API processes against one merchant, and the same INSERT straight from pg clients.
 * Each server runs in a process of its own, autocannon here; all alternate at each connection
 * count. Env: BENCH_SECONDS (5), BENCH_CONNECTIONS ("16,64,256"), BENCH_MERCHANTS (100),
 * BENCH_SQL_CLIENTS ("8,32"), BENCH_UNSLOTTED (1: counters as before issue 21, one row per
 * key), BENCH_POSTGRES_URL, REDIS_URL.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '16,64,256').split(',').map(Number);
const MERCHANTS = Number(process.env.BENCH_MERCHANTS ?? 100);
const SQL_CLIENTS = (process.env.BENCH_SQL_CLIENTS ?? '8,32').split(',').map(Number);
const PATH = '/api/merchant/createOrder';
/** The baseline's table: what a row costs with nothing on it but its primary key and unique order_no. */
const LEAN_TABLE = 'bench_lean_orders';

async function serveApi(): Promise<void> {
  answerRss();
  answerProfile();
  const counter = countCosts();
  const app = await createApiApp(loadConfig(process.env));
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onRequest', async () => counter.request());
  await app.listen({ port: 0, host: '127.0.0.1' });
  process.send!({ port: (app.getHttpServer().address() as AddressInfo).port });
}

/** An order row as createOrder inserts it, into `table`; order_no from the process and a sequence. */
function insertOrder(table: string): string {
  return `INSERT INTO ${table} (order_no, merchant_id, channel_id, order_type, status, payment_method, cny_fen, service_rate, service_fen, deposit_rate,
                               deposit_fen, merchant_actual_fen, request_hash, expires_at, created_at, updated_at)
           VALUES ($1, $2, $3, 1, 'pending', $4, $5, 0.006, $6, 0, 0, $7, $8, now() + interval '30 minutes', now(), now())`;
}

let sequence = 0;
function nextOrderNo(): string {
  return `29${String(Date.now()).slice(-12)}${String(process.pid % 100).padStart(2, '0')}${String(sequence++ % 1_000_000).padStart(6, '0')}`;
}

/** The baseline: the same work createOrder cannot avoid, and nothing else, into BENCH_BARE_TABLE. */
function serveBare(): void {
  answerRss();
  const counter = countCosts();
  const merchants = new Map((JSON.parse(process.env.BENCH_MERCHANT_KEYS!) as { id: number; api_key: string; api_secret: string }[]).map((m) => [m.api_key, m]));
  const insert = insertOrder(process.env.BENCH_BARE_TABLE!);
  const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const redis = new Redis(REDIS);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      counter.request();
      void (async () => {
        const params = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        const merchant = merchants.get(String(params.api_key));
        if (!merchant || !verify(params, String(params.signature), merchant.api_secret)) return void res.writeHead(401).end();
        if ((await redis.set(`bare-nonce:${String(params.api_key)}:${String(params.nonce)}`, '1', 'EX', 600, 'NX')) !== 'OK')
          return void res.writeHead(401).end();
        const fen = Math.round(Number(params.cny_amount) * 100);
        const service = Math.round(fen * 0.006);
        const orderNo = nextOrderNo();
        await pool.query(insert, [orderNo, merchant.id, params.paychannel_id, params.paychannel_paymethod, fen, service, fen - service, 'x'.repeat(64)]);
        const body = JSON.stringify({
          code: 1,
          msg: 'Order created',
          time: String(Math.floor(Date.now() / 1000)),
          data: { order_no: orderNo, status: 'pending' },
        });
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(body);
      })().catch(() => res.writeHead(500).end());
    });
  });
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
}

/** `clients` pg sessions inserting createOrder's row, each in a transaction of its own, for `seconds`: rows per second. */
async function sqlInsertRate(url: string, table: string, merchantIds: number[], channelId: number, clients: number, seconds: number): Promise<number> {
  const sessions = await Promise.all(
    Array.from({ length: clients }, async () => {
      const client = new Client({ connectionString: url });
      await client.connect();
      return client;
    }),
  );
  const insert = insertOrder(table);
  const deadline = Date.now() + seconds * 1000;
  let rows = 0;
  try {
    await Promise.all(
      sessions.map(async (client, c) => {
        for (let k = c; Date.now() < deadline; k += clients) {
          await client.query(insert, [nextOrderNo(), merchantIds[k % merchantIds.length], channelId, 'alipay', 10000, 60, 9940, 'x'.repeat(64)]);
          rows++;
        }
      }),
    );
  } finally {
    await Promise.all(sessions.map((client) => client.end()));
  }
  return rows / seconds;
}

interface Scenario {
  name: string;
  ports: number[];
  body: () => string;
  /** The server processes whose own costs are counted. */
  children: ChildProcess[];
}

async function main(): Promise<void> {
  const db = await benchDatabase('create', MERCHANTS);
  await adminQueryOn(db.url, [
    `CREATE TABLE ${LEAN_TABLE} (LIKE orders INCLUDING DEFAULTS)`,
    `ALTER TABLE ${LEAN_TABLE} ALTER COLUMN id DROP DEFAULT, ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY, ADD PRIMARY KEY (id), ADD UNIQUE (order_no)`,
  ]);
  // BENCH_UNSLOTTED=1: the whole run against the counters as they were before issue 21.
  if (process.env.BENCH_UNSLOTTED) await foldCounterSlots(db.url);
  const keys = JSON.stringify(db.merchants.map((m) => ({ id: m.id, api_key: m.api_key, api_secret: m.api_secret })));
  const api = await forkServer(__filename, 'api', db.env);
  const api2 = await forkServer(__filename, 'api', db.env);
  // The API as behind a transaction pooler (issue 40): DATABASE_DIRECT_URL set apart from DATABASE_URL,
  // so its hot statements go unnamed (parsed and planned every time) and the statement limit is the database's default.
  await adminQueryOn(db.url, [`ALTER DATABASE "${db.name}" SET statement_timeout = 30000`]);
  const unnamed = await forkServer(__filename, 'api', { ...db.env, DATABASE_DIRECT_URL: `${db.url}?application_name=direct` });
  const bareLean = await forkServer(__filename, 'bare', { ...db.env, BENCH_MERCHANT_KEYS: keys, BENCH_BARE_TABLE: LEAN_TABLE });
  const bareOrders = await forkServer(__filename, 'bare', { ...db.env, BENCH_MERCHANT_KEYS: keys, BENCH_BARE_TABLE: 'orders' });
  const params = { order_type: 1, cny_amount: '100.00', paychannel_id: db.channelId, paychannel_paymethod: 'alipay' };
  const one = (): string => signedBody(db.merchant, params);
  let turn = 0;
  const many = (): string => signedBody(db.merchants[turn++ % db.merchants.length], params);
  const scenarios: Scenario[] = [
    { name: 'service, 1 merchant', ports: [api.port], body: one, children: [api.child] },
    { name: `service, ${MERCHANTS} merchants`, ports: [api.port], body: many, children: [api.child] },
    { name: 'service, unnamed statements (pooled), 1 merchant', ports: [unnamed.port], body: one, children: [unnamed.child] },
    { name: 'bare -> lean table, 1 merchant', ports: [bareLean.port], body: one, children: [bareLean.child] },
    { name: 'bare -> orders table, 1 merchant', ports: [bareOrders.port], body: one, children: [bareOrders.child] },
    { name: 'service x2 processes, 1 merchant', ports: [api.port, api2.port], body: one, children: [api.child, api2.child] },
  ];
  try {
    const rows: string[] = [];
    const goals: string[] = [];
    const costRows: string[] = [];
    const cpuRows: string[] = [];
    for (const connections of CONNECTIONS) {
      const measured: Record<string, LoadResult> = {};
      const busy: Record<string, string> = {};
      for (const scenario of scenarios) {
        if (scenario.ports.length > 1 && connections < 64) continue;
        await signedLoad(scenario.ports, PATH, connections, 2, scenario.body);
        const before = await totalCost(scenario.children);
        const backendsBefore = await backendCpu(db.name);
        const machineBefore = machineCpu();
        const r = await signedLoad(scenario.ports, PATH, connections, SECONDS, scenario.body);
        busy[scenario.name] = busyPercent(machineBefore, machineCpu());
        const backendsAfter = await backendCpu(db.name);
        const after = await totalCost(scenario.children);
        if (r.non2xx > 0 || r.errors > 0) throw new Error(`${scenario.name} at ${connections} connections: ${r.non2xx} non-2xx, ${r.errors} errors`);
        measured[scenario.name] = r;
        const n = after.requests - before.requests;
        const per = (k: keyof ServerCost) => ((after[k] - before[k]) / n).toFixed(2);
        // The processes' share of the machine: their CPU time over the run's wall time, in cores.
        const cores = (after.cpuMs - before.cpuMs) / 1000 / SECONDS;
        costRows.push(`| ${scenario.name} | ${connections} | ${per('cpuMs')} | ${cores.toFixed(2)} | ${per('pgQueries')} | ${per('redisCommands')} |`);
        const server = (after.cpuMs - before.cpuMs) / n;
        const backends = backendCpuSpent(backendsBefore, backendsAfter);
        const spent = (k: 'postgresMs' | 'redisMs' | 'loadMs') => backends[k] / n;
        const total = server + spent('postgresMs') + spent('redisMs') + spent('loadMs');
        cpuRows.push(
          `| ${scenario.name} | ${connections} | ${server.toFixed(2)} | ${spent('postgresMs').toFixed(2)} | ${spent('redisMs').toFixed(2)} | ${spent('loadMs').toFixed(2)} | ${total.toFixed(2)} |`,
        );
      }
      const lean = measured['bare -> lean table, 1 merchant'];
      // A run the neighbours starved to nothing shows as n/a, not as a ratio of zeros.
      const ratio = (a: number, b: number, digits: number): string => (a > 0 && b > 0 ? `${(a / b).toFixed(digits)}x` : 'n/a');
      for (const [name, r] of Object.entries(measured)) {
        rows.push(
          `| ${name} | ${connections} | ${fmt(r.rps)} | ${r.p50} | ${r.p99} | ${ratio(r.rps, lean.rps, 2)} | ${ratio(r.p99, lean.p99, 1)} | ${busy[name]} |`,
        );
      }
      const single = measured['service, 1 merchant'];
      const spread = measured[`service, ${MERCHANTS} merchants`];
      const two = measured['service x2 processes, 1 merchant'];
      if (connections === 64)
        goals.push(`at 64: 1 merchant / lean bare ${ratio(single.rps, lean.rps, 2)} (goal >= 0.5x), p99 ${ratio(single.p99, lean.p99, 1)} lean's (goal <= 3x)`);
      if (connections >= 64) goals.push(`at ${connections}: 1 merchant / ${MERCHANTS} merchants ${ratio(single.rps, spread.rps, 2)} (goal >= 0.9x)`);
      if (two) goals.push(`at ${connections}: two API processes / one ${ratio(two.rps, single.rps, 2)} (goal >= 1x)`);
      const pooled = measured['service, unnamed statements (pooled), 1 merchant'];
      goals.push(`at ${connections}: unnamed statements / named ${ratio(pooled.rps, single.rps, 2)} req/s, p99 ${ratio(pooled.p99, single.p99, 2)}`);
    }
    console.log(
      `createOrder: autocannon, ${SECONDS} s per run after a 2 s warm-up, a fresh nonce and signature per request; every server shares the 2 cores with the load generator, PostgreSQL, Redis and the neighbours`,
    );
    console.log('| scenario | connections | req/s | p50 ms | p99 ms | req/s vs lean bare | p99 vs lean bare | machine CPU busy (2 cores, every process) |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const row of rows) console.log(row);
    console.log('');
    console.log(`goals (issue 21): ${goals.join('; ')}`);
    console.log('');
    console.log('Cost per request, counted inside each server process during the same runs (CPU of that process only; PostgreSQL and Redis work on top):');
    console.log('| server | connections | CPU ms | cores used | PostgreSQL round trips | Redis commands |');
    console.log('|---|---|---|---|---|---|');
    for (const row of costRows) console.log(row);
    console.log('');
    console.log(
      'CPU per request on this machine, every process that serves it (/proc: the PostgreSQL backends of the bench database, the Redis server, this load generator), ms: what decides the rate once the 2 cores are saturated, whatever the neighbours take:',
    );
    console.log('| scenario | connections | server process(es) | PostgreSQL | Redis | load generator | total |');
    console.log('|---|---|---|---|---|---|---|');
    for (const row of cpuRows) console.log(row);

    // The database alone, as pgbench would: createOrder's INSERT from pg sessions, no HTTP;
    // then the same with the counters folded back to one row per key, as before their slots.
    const ids = db.merchants.map((m) => m.id);
    const sqlRows: string[] = [];
    const rates = async (clients: number) => ({
      one: await sqlInsertRate(db.url, 'orders', ids.slice(0, 1), db.channelId, clients, 3),
      spread: await sqlInsertRate(db.url, 'orders', ids, db.channelId, clients, 3),
      lean: await sqlInsertRate(db.url, LEAN_TABLE, ids.slice(0, 1), db.channelId, clients, 3),
    });
    const unslotted = Boolean(process.env.BENCH_UNSLOTTED);
    for (const counters of unslotted ? ['one row per key'] : ['slots', 'one row per key']) {
      if (counters === 'one row per key' && !unslotted) await foldCounterSlots(db.url);
      for (const clients of SQL_CLIENTS) {
        const r = await rates(clients);
        sqlRows.push(
          `| ${counters} | ${clients} | ${fmt(r.one)} | ${fmt(r.spread)} | ${fmt(r.lean)} | ${(r.one / r.spread).toFixed(2)}x | ${(r.one / r.lean).toFixed(2)}x |`,
        );
      }
    }
    console.log('');
    console.log(
      "createOrder's INSERT straight from pg sessions (autocommit, 3 s each), with the counters in slots, then folded back to one row per key (before issue 21): rows/s",
    );
    console.log(`| counters | sessions | orders, 1 merchant | orders, ${MERCHANTS} merchants | lean table | 1 / ${MERCHANTS} merchants | 1 merchant / lean |`);
    console.log('|---|---|---|---|---|---|---|');
    for (const row of sqlRows) console.log(row);

    // Where the API's CPU goes: one more run at 64 connections under the sampling profiler.
    const profile = await profileWhile(api.child, () => signedLoad(api.port, PATH, 64, Math.min(SECONDS, 5), one));
    console.log('');
    console.log('createOrder API profile, 1 merchant at 64 connections (node:inspector sampling, top self time):');
    console.log('| self % | function | where |');
    console.log('|---|---|---|');
    for (const row of profile) console.log(`| ${row.selfPercent.toFixed(1)} | ${row.fn} | ${row.where} |`);
  } finally {
    for (const server of [api, api2, unnamed, bareLean, bareOrders]) await server.stop();
    await removeRedisPrefix(db.name);
    await db.drop();
  }
}

/** OrderCountSlots1764410000000's down: the counters as they were before, one row per key, every total kept. */
async function foldCounterSlots(url: string): Promise<void> {
  const ds = new DataSource(dataSourceOptions(url, 1));
  await ds.initialize();
  const runner = ds.createQueryRunner();
  try {
    await runner.startTransaction();
    await new OrderCountSlots1764410000000().down(runner);
    await runner.commitTransaction();
  } finally {
    await runner.release();
    await ds.destroy();
  }
}

/** The summed costs of the server processes of a scenario. */
async function totalCost(children: ChildProcess[]): Promise<ServerCost> {
  const costs = await Promise.all(children.map((child) => askCost(child)));
  return costs.reduce((a, b) => ({
    requests: a.requests + b.requests,
    cpuMs: a.cpuMs + b.cpuMs,
    pgQueries: a.pgQueries + b.pgQueries,
    redisCommands: a.redisCommands + b.redisCommands,
  }));
}

async function adminQueryOn(url: string, statements: string[]): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end();
  }
}

const role = process.argv[2];
if (role === 'api') void serveApi();
else if (role === 'bare') serveBare();
else
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
