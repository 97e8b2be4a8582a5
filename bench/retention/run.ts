import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { CallbackFiguresRepository, RetentionRepository, dataSourceOptions } from '@app/db';
import { benchDatabase, fmt } from '../support';

/**
 * `npm run bench:retention` (or node dist/bench/retention/run.js): the retention sweep's batches and
 * the callback gauges' queries with 100,000 and then 1,000,000 old rows across order_events,
 * callback_deliveries and callback_attempts (1 : 1 : 8, a delivery that used up its retries), on top of
 * 100,000 recent rows that stay. Per size: each gauge query run GAUGE_RUNS times (median ms), then
 * the backlog swept batch by batch exactly as RetentionSweep does (deliveries with their attempts,
 * then events; default batch 1,000), each batch timed. Prints ms at each size and the 1M / 100k
 * ratio: flat (~1x) is the design. For reference, the count(*) GROUP BY status the deliveries gauge
 * ran before callback_delivery_counts. Env: BENCH_RETENTION_SIZES ("100000,1000000"),
 * BENCH_RETENTION_BATCH (1000), BENCH_GAUGE_RUNS (20), BENCH_POSTGRES_URL.
 */
const SIZES = (process.env.BENCH_RETENTION_SIZES ?? '100000,1000000').split(',').map(Number);
const BATCH = Number(process.env.BENCH_RETENTION_BATCH ?? 1000);
const GAUGE_RUNS = Number(process.env.BENCH_GAUGE_RUNS ?? 20);
const ATTEMPTS = 8;
const RECENT_ROWS = 100_000;
const DAY_MS = 86_400_000;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const started = process.hrtime.bigint();
  const value = await fn();
  return [Number(process.hrtime.bigint() - started) / 1e6, value];
}

/**
 * `rows` rows of history (rows / 10 events, as many deliveries, 8 attempts each) `ageDays` to
 * `ageDays` + `spreadDays` old, over 100 orders: one INSERT ... SELECT per table, events and
 * attempts without foreign-key checks (consistent by construction), deliveries through their triggers.
 */
async function seedHistory(db: Client, merchantId: number, channelId: number, rows: number, ageDays: number, spreadDays: number, tag: string): Promise<number> {
  const started = Date.now();
  const events = Math.round(rows / (2 + ATTEMPTS));
  const { rows: orders } = await db.query<{ id: string }>(
    `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, cny_fen, service_rate, service_fen, deposit_rate, deposit_fen, merchant_actual_fen,
                         request_hash, paid_at, expires_at, created_at, updated_at)
     SELECT $3 || lpad(g::text, 8, '0'), $1, $2, 1, 'completed', 1000, 0, 0, 0, 0, 1000, 'h', now() - make_interval(days => $4), now() - make_interval(days => $4),
            now() - make_interval(days => $4), now() - make_interval(days => $4)
       FROM generate_series(1, 100) g RETURNING id`,
    [merchantId, channelId, tag, ageDays + spreadDays],
  );
  const ids = orders.map((o) => o.id);
  const bulk = async (sql: string, params: unknown[]): Promise<void> => {
    await db.query('BEGIN');
    await db.query('SET LOCAL session_replication_role = replica');
    await db.query(sql, params);
    await db.query('COMMIT');
  };
  await bulk(
    `INSERT INTO order_events (id, order_id, merchant_id, type, payload, created_at)
     SELECT gen_random_uuid(), ($1::bigint[])[1 + g % cardinality($1::bigint[])], $2, 'order.paid', jsonb_build_object('tag', $5::text),
            now() - make_interval(days => $3) - make_interval(secs => (g * $6 * 86400.0 / $4)::float8)
       FROM generate_series(0, $4::int - 1) g`,
    [ids, merchantId, ageDays, events, tag, spreadDays],
  );
  await db.query(
    `INSERT INTO callback_deliveries (id, event_id, event_seq, order_id, merchant_id, status, attempts_made, next_attempt_at, notify_url, destination, created_at, updated_at)
     SELECT gen_random_uuid(), e.id, e.seq, e.order_id, e.merchant_id, 'failed', $2, e.created_at, 'https://shop.example/notify', 'https://shop.example:443', e.created_at, e.created_at
       FROM order_events e WHERE e.payload->>'tag' = $1`,
    [tag, ATTEMPTS],
  );
  await bulk(
    `INSERT INTO callback_attempts (delivery_id, number, attempted_at, http_status, duration_ms)
     SELECT d.id, n, d.created_at, 500, 5 FROM order_events e JOIN callback_deliveries d ON d.event_id = e.id CROSS JOIN generate_series(1, $2::int) n
      WHERE e.payload->>'tag' = $1`,
    [tag, ATTEMPTS],
  );
  // As autovacuum would leave tables this size: statistics and the visibility map.
  await db.query('VACUUM ANALYZE order_events, callback_deliveries, callback_attempts, callback_delivery_counts');
  return Date.now() - started;
}

interface SizeResult {
  gauges: Record<string, number>;
  batches: { deliveries: number[]; events: number[] };
  sweepSeconds: number;
}

async function main(): Promise<void> {
  const bench = await benchDatabase('retention');
  const db = new Client({ connectionString: bench.url });
  await db.connect();
  const dataSource = await new DataSource(dataSourceOptions(bench.url, 2, 'bench-retention')).initialize();
  const retention = new RetentionRepository(dataSource);
  const deliveries = new CallbackFiguresRepository(dataSource);
  const gaugeQueries: Record<string, () => Promise<unknown>> = {
    'delivery lag (min next_attempt_at of due pending)': () => deliveries.deliveryLagSeconds(),
    'open circuits (scrape)': () => deliveries.openCircuitCount(),
    'open circuits + held deliveries (cached)': () => deliveries.circuitFigures(),
    'deliveries by status (callback_delivery_counts)': () => deliveries.statusCounts(),
    'reference: count(*) GROUP BY status, the query before': () => dataSource.query('SELECT status, count(*) FROM callback_deliveries GROUP BY status'),
  };
  const results: Record<number, SizeResult> = {};
  const seedTimes: string[] = [];
  try {
    seedTimes.push(
      `${RECENT_ROWS.toLocaleString('en')} recent in ${fmt((await seedHistory(db, bench.merchant.id, bench.channelId, RECENT_ROWS, 1, 60, 'recent')) / 1000, 1)} s`,
    );
    for (const size of SIZES) {
      seedTimes.push(
        `${size.toLocaleString('en')} old in ${fmt((await seedHistory(db, bench.merchant.id, bench.channelId, size, 91, 300, `old${size}`)) / 1000, 1)} s`,
      );
      const result: SizeResult = { gauges: {}, batches: { deliveries: [], events: [] }, sweepSeconds: 0 };
      for (const [name, query] of Object.entries(gaugeQueries)) {
        await query();
        const runs: number[] = [];
        for (let i = 0; i < GAUGE_RUNS; i++) runs.push((await timed(query))[0]);
        result.gauges[name] = median(runs);
      }
      const before = new Date(Date.now() - 90 * DAY_MS);
      const started = Date.now();
      for (;;) {
        const [ms, gone] = await timed(() => retention.deleteDeliveries(before, BATCH));
        if (gone.deliveries === BATCH) result.batches.deliveries.push(ms);
        if (gone.deliveries < BATCH) break;
      }
      for (;;) {
        const [ms, gone] = await timed(() => retention.deleteEvents(before, BATCH));
        if (gone === BATCH) result.batches.events.push(ms);
        if (gone < BATCH) break;
      }
      result.sweepSeconds = (Date.now() - started) / 1000;
      results[size] = result;
    }
    const [small, large] = [SIZES[0], SIZES[SIZES.length - 1]];
    const ratio = (a: number, b: number): string => `${(b / Math.max(a, 0.001)).toFixed(2)}x`;
    console.log(
      `Retention sweep and callback gauges: old rows 1 event : 1 delivery : ${ATTEMPTS} attempts, on ${RECENT_ROWS.toLocaleString('en')} recent rows that stay; batch ${BATCH}; gauges median of ${GAUGE_RUNS} runs after a warm-up`,
    );
    console.log(`seeded with INSERT ... SELECT generate_series, then VACUUM ANALYZE: ${seedTimes.join(', ')}`);
    console.log('');
    console.log(
      `| statement | ${SIZES.map((s) => `${s.toLocaleString('en')} old rows, ms`).join(' | ')} | ${large.toLocaleString('en')} / ${small.toLocaleString('en')} |`,
    );
    console.log(`|---|${SIZES.map(() => '---').join('|')}|---|`);
    for (const kind of ['deliveries', 'events'] as const) {
      const label = kind === 'deliveries' ? `delivery batch (${BATCH} deliveries + ${BATCH * ATTEMPTS} attempts)` : `event batch (${BATCH} events)`;
      for (const [stat, fn] of [
        ['median', median],
        ['p90', (v: number[]) => percentile(v, 90)],
      ] as const) {
        const cells = SIZES.map((s) => fmt(fn(results[s].batches[kind]), 1));
        console.log(`| ${label}, ${stat} | ${cells.join(' | ')} | ${ratio(fn(results[small].batches[kind]), fn(results[large].batches[kind]))} |`);
      }
    }
    for (const name of Object.keys(gaugeQueries)) {
      const cells = SIZES.map((s) => fmt(results[s].gauges[name], 2));
      console.log(`| gauge: ${name} | ${cells.join(' | ')} | ${ratio(results[small].gauges[name], results[large].gauges[name])} |`);
    }
    console.log('');
    console.log(
      `whole backlog swept: ${SIZES.map((s) => `${s.toLocaleString('en')} old rows in ${fmt(results[s].sweepSeconds, 1)} s (${results[s].batches.deliveries.length} + ${results[s].batches.events.length} full batches)`).join(', ')}`,
    );
  } finally {
    await dataSource.destroy();
    await db.end();
    await bench.drop();
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
