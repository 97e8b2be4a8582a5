import { type AddressInfo } from 'node:net';
import { Client } from 'pg';
import { loadConfig } from '@app/common';
import { createApiApp } from '../../apps/api/src/create-api-app';
import { ORDER_COUNT_SLOTS } from '@app/db/sql/order-counts-apply';
import { type BenchDatabase, answerRss, benchDatabase, forkServer, signedBody, signedLoad } from '../support';
import { seedOrders } from './seed';

/**
 * `npm run bench` (or node dist/bench/order-list/run.js): orderQueryList for one merchant with
 * 100,000 orders, then the same merchant grown to 1,000,000 (bulk-loaded by seed.ts): page 1,
 * page 500, filtered by status, by a 30-day time window, and both. p99 should stay flat as
 * the table grows 10x. Env: BENCH_SECONDS (5), BENCH_LIST_CONNECTIONS (16), BENCH_LIST_SIZES
 * ("100000,1000000"), BENCH_POSTGRES_URL, REDIS_URL.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_LIST_CONNECTIONS ?? 16);
const SIZES = (process.env.BENCH_LIST_SIZES ?? '100000,1000000').split(',').map(Number);
const PATH = '/api/merchant/orderQueryList';

async function serveApi(): Promise<void> {
  answerRss();
  const app = await createApiApp(loadConfig(process.env));
  await app.listen({ port: 0, host: '127.0.0.1' });
  process.send!({ port: (app.getHttpServer().address() as AddressInfo).port });
}

async function main(): Promise<void> {
  const db = await benchDatabase('list');
  const api = await forkServer(__filename, 'api', db.env);
  const now = Math.floor(Date.now() / 1000);
  const queries: Record<string, Record<string, unknown>> = {
    'page 1': { page: 1, limit: 20 },
    'page 500': { page: 500, limit: 20 },
    'status=pending': { status: 'pending', limit: 20 },
    '30-day window': { start_time: now - 60 * 86_400, end_time: now - 30 * 86_400, limit: 20 },
    'status + window': { status: 'completed', start_time: now - 60 * 86_400, end_time: now - 30 * 86_400, limit: 20 },
  };
  const results: Record<string, Record<number, { rps: number; p50: number; p99: number }>> = {};
  const totals: string[] = [];
  try {
    let seeded = 0;
    const seedTimes: string[] = [];
    for (const size of SIZES) {
      const ms = await seedOrders(db.url, db.merchant.id, db.channelId, seeded, size);
      seedTimes.push(`${size - seeded} rows in ${(ms / 1000).toFixed(1)} s`);
      seeded = size;
      for (const [name, params] of Object.entries(queries)) {
        const body = (): string => signedBody(db.merchant, params);
        totals.push(await checkTotal(api.port, db, params, size, name));
        await signedLoad(api.port, PATH, CONNECTIONS, 1, body);
        const r = await signedLoad(api.port, PATH, CONNECTIONS, SECONDS, body);
        if (r.non2xx > 0 || r.errors > 0) throw new Error(`${name} at ${size}: ${r.non2xx} non-2xx, ${r.errors} errors`);
        (results[name] ??= {})[size] = r;
      }
    }
    console.log(`orderQueryList: one merchant, ${CONNECTIONS} connections, ${SECONDS} s per run, limit 20, a fresh nonce and signature per request`);
    console.log(`seeded with INSERT ... SELECT generate_series: ${seedTimes.join(', ')}`);
    console.log(`| query | ${SIZES.map((s) => `${s.toLocaleString('en')} orders: req/s, p50, p99 ms`).join(' | ')} | p99 growth |`);
    console.log(`|---|${SIZES.map(() => '---').join('|')}|---|`);
    for (const [name, bySize] of Object.entries(results)) {
      const cells = SIZES.map((s) => `${bySize[s].rps.toFixed(0)}, ${bySize[s].p50}, ${bySize[s].p99}`);
      const growth = bySize[SIZES[SIZES.length - 1]].p99 / Math.max(1, bySize[SIZES[0]].p99);
      console.log(`| ${name} | ${cells.join(' | ')} | ${growth.toFixed(1)}x |`);
    }
    console.log(`API RSS after the runs: ${(await api.rss()).toFixed(0)} MiB`);
    console.log(`totals against count(*) over orders, counters spread over all ${ORDER_COUNT_SLOTS} slots of every key: ${totals.join('; ')}`);
  } finally {
    await api.stop();
    await db.drop();
  }
}

/** orderQueryList's total for `params` through the API, which must equal count(*) over the same rows; throws when it does not. */
async function checkTotal(port: number, db: BenchDatabase, params: Record<string, unknown>, size: number, name: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}${PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: signedBody(db.merchant, params),
  });
  const total = ((await res.json()) as { data: { total: number } }).data.total;
  const where = ['merchant_id = $1'];
  const args: unknown[] = [db.merchant.id];
  if (params.status !== undefined) where.push(`status = $${args.push(params.status)}`);
  if (params.start_time !== undefined) where.push(`created_at >= to_timestamp($${args.push(params.start_time)})`);
  if (params.end_time !== undefined) where.push(`created_at < to_timestamp($${args.push(Number(params.end_time) + 1)})`);
  const client = new Client({ connectionString: db.url });
  await client.connect();
  try {
    const [{ n }] = (await client.query(`SELECT count(*)::int AS n FROM orders WHERE ${where.join(' AND ')}`, args)).rows;
    if (total !== n) throw new Error(`${name} at ${size}: total ${total}, count(*) ${n}`);
    return `${name} at ${size.toLocaleString('en')}: ${total} = ${n}`;
  } finally {
    await client.end();
  }
}

if (process.argv[2] === 'api') void serveApi();
else
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
