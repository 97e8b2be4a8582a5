import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { Pool } from 'pg';
import { loadConfig } from '@app/common';
import { verify } from '@app/signature';
import { createApiApp } from '../../apps/api/src/create-api-app';
import { REDIS, answerProfile, answerRss, askCost, benchDatabase, countCosts, fmt, forkServer, profileWhile, signedBody, signedLoad } from '../support';

/**
 * `npm run bench` (or node dist/bench/create-order/run.js): createOrder end to end (signed, a
 * fresh nonce per request, real PostgreSQL and Redis, the sandbox channel) against a bare
 * node:http server doing the least the same request needs: parse the JSON, verify the same
 * HMAC, SET NX the nonce in Redis, INSERT one comparable order row, answer. Each server runs
 * in a process of its own, autocannon here; they alternate at each connection count.
 * Env: BENCH_SECONDS (8), BENCH_CONNECTIONS ("16,64,256"), BENCH_POSTGRES_URL, REDIS_URL.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '16,64,256').split(',').map(Number);
const PATH = '/api/merchant/createOrder';

async function serveApi(): Promise<void> {
  answerRss();
  answerProfile();
  const counter = countCosts();
  const app = await createApiApp(loadConfig(process.env));
  app.getHttpAdapter().getInstance().addHook('onRequest', async () => counter.request());
  await app.listen({ port: 0, host: '127.0.0.1' });
  process.send!({ port: (app.getHttpServer().address() as AddressInfo).port });
}

/** The baseline: the same work createOrder cannot avoid, and nothing else. */
function serveBare(): void {
  answerRss();
  const counter = countCosts();
  const secret = process.env.BENCH_API_SECRET!;
  const merchantId = Number(process.env.BENCH_MERCHANT_ID);
  const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const redis = new Redis(REDIS);
  let sequence = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      counter.request();
      void (async () => {
        const params = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        if (!verify(params, String(params.signature), secret)) return void res.writeHead(401).end();
        if ((await redis.set(`bare-nonce:${String(params.api_key)}:${String(params.nonce)}`, '1', 'EX', 600, 'NX')) !== 'OK') return void res.writeHead(401).end();
        const fen = Math.round(Number(params.cny_amount) * 100);
        const service = Math.round(fen * 0.006);
        const orderNo = `29${String(Date.now()).slice(-12)}${String(process.pid % 100).padStart(2, '0')}${String(sequence++ % 1_000_000).padStart(6, '0')}`;
        await pool.query(
          `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, payment_method, cny_fen, service_rate, service_fen, deposit_rate,
                               deposit_fen, merchant_actual_fen, request_hash, expires_at, created_at, updated_at)
           VALUES ($1, $2, $3, 1, 'pending', $4, $5, 0.006, $6, 0, 0, $7, $8, now() + interval '30 minutes', now(), now())`,
          [orderNo, merchantId, params.paychannel_id, params.paychannel_paymethod, fen, service, fen - service, 'x'.repeat(64)],
        );
        const body = JSON.stringify({ code: 1, msg: 'Order created', time: String(Math.floor(Date.now() / 1000)), data: { order_no: orderNo, status: 'pending' } });
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(body);
      })().catch(() => res.writeHead(500).end());
    });
  });
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
}

async function main(): Promise<void> {
  const db = await benchDatabase('create');
  const env = { ...db.env, BENCH_API_SECRET: db.merchant.api_secret, BENCH_MERCHANT_ID: String(db.merchant.id) };
  const api = await forkServer(__filename, 'api', env);
  const bare = await forkServer(__filename, 'bare', env);
  const body = (): string =>
    signedBody(db.merchant, { order_type: 1, cny_amount: '100.00', paychannel_id: db.channelId, paychannel_paymethod: 'alipay' });
  try {
    const rows: string[] = [];
    const ratios: string[] = [];
    const costs: Record<string, { cpuMs: number; pg: number; redis: number }> = {};
    const costRows: string[] = [];
    for (const connections of CONNECTIONS) {
      const measured: Record<string, Awaited<ReturnType<typeof signedLoad>>> = {};
      for (const [role, server] of [['api', api], ['bare', bare]] as const) {
        await signedLoad(server.port, PATH, connections, 2, body);
        const before = await askCost(server.child);
        const r = await signedLoad(server.port, PATH, connections, SECONDS, body);
        const after = await askCost(server.child);
        if (r.non2xx > 0 || r.errors > 0) throw new Error(`${role} at ${connections} connections: ${r.non2xx} non-2xx, ${r.errors} errors`);
        measured[role] = r;
        const n = after.requests - before.requests;
        costs[role] = {
          cpuMs: (after.cpuMs - before.cpuMs) / n,
          pg: (after.pgQueries - before.pgQueries) / n,
          redis: (after.redisCommands - before.redisCommands) / n,
        };
      }
      const rss = await api.rss();
      const ratio = measured.api.rps / measured.bare.rps;
      rows.push(
        `| ${connections} | ${fmt(measured.api.rps)} | ${measured.api.p50} | ${measured.api.p99} | ${fmt(rss)} | ${fmt(measured.bare.rps)} | ${measured.bare.p50} | ${measured.bare.p99} | ${ratio.toFixed(2)}x |`,
      );
      ratios.push(`${connections}: ${ratio.toFixed(2)}x`);
      costRows.push(
        `| ${connections} | ${costs.api.cpuMs.toFixed(2)} | ${costs.api.pg.toFixed(2)} | ${costs.api.redis.toFixed(2)} | ${costs.bare.cpuMs.toFixed(2)} | ${costs.bare.pg.toFixed(2)} | ${costs.bare.redis.toFixed(2)} |`,
      );
    }
    console.log(`createOrder: autocannon, ${SECONDS} s per run after a 2 s warm-up, a fresh nonce and signature per request`);
    console.log('| connections | service req/s | p50 ms | p99 ms | API RSS MiB | bare req/s | p50 ms | p99 ms | service/bare |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const row of rows) console.log(row);
    console.log(`ratio (service/bare throughput) by connections: ${ratios.join(', ')}; goal (issue 11) at 64: >= 0.6x, p99 <= 2x bare's p99, API CPU <= 0.45 ms, <= 2 PostgreSQL and <= 1 Redis round trips`);
    console.log('');
    console.log('Cost per request, counted inside each server process during the same runs (CPU of that process only; PostgreSQL and Redis work on top):');
    console.log('| connections | service CPU ms | PostgreSQL round trips | Redis commands | bare CPU ms | PostgreSQL | Redis |');
    console.log('|---|---|---|---|---|---|---|');
    for (const row of costRows) console.log(row);

    // Where the API's CPU goes: one more run at 64 connections under the sampling profiler.
    const profile = await profileWhile(api.child, () => signedLoad(api.port, PATH, 64, Math.min(SECONDS, 5), body));
    console.log('');
    console.log('createOrder API profile at 64 connections (node:inspector sampling, top self time):');
    console.log('| self % | function | where |');
    console.log('|---|---|---|');
    for (const row of profile) console.log(`| ${row.selfPercent.toFixed(1)} | ${row.fn} | ${row.where} |`);
  } finally {
    await api.stop();
    await bare.stop();
    await clearQueueKeys(db.name);
    await db.drop();
  }
}

/** What the run left on the shared Redis under its queue prefix (rate-limit buckets, queued jobs). */
async function clearQueueKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    await redis.quit();
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
