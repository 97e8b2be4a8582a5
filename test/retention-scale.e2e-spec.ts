import { AsyncLocalStorage } from 'node:async_hooks';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Queue } from 'bullmq';
import { Client } from 'pg';
import { PostgresQueryRunner } from 'typeorm/driver/postgres/PostgresQueryRunner';
import { type AppConfig, QUEUE } from '@app/common';
import { CallbackFiguresRepository, RetentionRepository } from '@app/db';
import { ChannelSetupService, MerchantAccountService, OperatorModule } from '@app/operator';
import { CallbackSweeper } from '../apps/worker/src/callbacks/callback-sweeper';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { RetentionSweep } from '../apps/worker/src/retention/retention-sweep';
import { WorkerTuning } from '../apps/worker/src/worker-tuning';
import { insertAgedOrders } from './helpers/aged-orders';
import { TEST_REDIS_URL, testConfig } from './helpers/config';
import { createTestDatabase } from './helpers/database';
import { removeTestKeys } from './helpers/redis-keys';

/** The tables retention keeps bounded: no statement of the sweep or of a gauge may read one of them whole. */
const BIG_TABLES = ['order_events', 'callback_deliveries', 'callback_attempts'];
/** Old orders the history hangs on: many events each, as a busy merchant's order with many resends would have. */
const OLD_ORDERS = 1000;
/** Attempts per delivery: a delivery that used up its retries, as most old history of a flaky receiver. */
const ATTEMPTS = 8;
/** Old rows per table at the large scale: events, deliveries (one per event), attempts: a million in all. */
const LARGE = { events: 100_000, deliveries: 100_000, attempts: 800_000 };
/** The small backlog the plans are compared with: a thousand old rows. */
const SMALL = { events: 100, deliveries: 100, attempts: 800 };
/**
 * Recent history that stays, 100k rows (as the last weeks of a live service): the tables are never
 * tiny, so the planner's choice for a table of a few pages (a Seq Scan, rightly) never stands in
 * for its choice at size. The plans compared are those of a 1k and a 1M backlog of old rows.
 */
const RECENT = { events: 10_000 };

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** Set while the spec runs a sweep or a gauge's query: only those statements are explained, not the worker's own in the background. */
const recording = new AsyncLocalStorage<true>();

/** Every node of a plan, depth first. */
function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** How a plan reads the big tables: one "node type on relation (index)" per access, in plan order (the first node a delete, "ModifyTable"). */
function bigTableAccess(plan: PlanNode): string[] {
  return nodes(plan)
    .filter((n) => n['Relation Name'] && BIG_TABLES.includes(n['Relation Name']))
    .map((n) => `${n['Node Type']} on ${n['Relation Name']}${n['Index Name'] ? ` (${n['Index Name']})` : ''}`);
}

/**
 * SPEC 10 Retention at scale (issue 29 item 8): with a million old rows the sweep still deletes in
 * batches of at most retentionBatch, at most retentionBatchesPerSweep per sweep, until none is left;
 * every batch's statement and every gauge's query reads the big tables through an index, with the
 * same plan shape as at a thousand old rows, and no batch is JIT compiled. Cost is shown by the
 * plans, never by timing (machines are noisy; bench/retention measures it).
 */
describe('retention at a million old rows', () => {
  const tuning = new WorkerTuning();
  let config: AppConfig;
  let operatorApp: INestApplicationContext;
  let worker: INestApplicationContext;
  let db: Client;
  let merchantId: number;
  let channelId: number;
  let reconciledChannelId: number;
  let nextOrderNo = 1;
  /** Each retention or gauge statement run, with its plan (EXPLAIN of the same text and parameters just before it ran). */
  let explained: { sql: string; access: string[] }[] = [];
  /** Rows each retention batch deleted. */
  let batches: { kind: 'deliveries' | 'events'; deleted: number }[] = [];

  beforeAll(async () => {
    config = testConfig(await createTestDatabase());
    for (const name of Object.values(QUEUE)) {
      const queue = new Queue(name, { connection: { url: TEST_REDIS_URL }, prefix: config.queuePrefix });
      await queue.pause();
      await queue.close();
    }
    operatorApp = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
    const merchants = operatorApp.get(MerchantAccountService);
    const channels = operatorApp.get(ChannelSetupService);
    merchantId = (await merchants.create({ name: 'Retention scale shop', mode: 'test', notifyUrl: 'https://shop.example/notify' })).id;
    channelId = (await channels.create({ category: 'remotepay', name: 'Sandbox', payMethod: 'alipay', adapter: 'sandbox' })).id;
    reconciledChannelId = (await channels.create({ category: 'processor', name: 'Reconciled', payMethod: 'alipay', adapter: 'sandbox' })).id;
    // The worker's own tuning, as deployed: the spec asserts what the defaults promise.
    worker = await createWorkerApp(config, { shutdownHooks: false });
    db = new Client({ connectionString: config.databaseUrl });
    await db.connect();

    // Every statement the spec has the worker run is explained first, on the same connection (in the same
    // transaction, with its settings) and with the same parameters: EXPLAIN runs nothing.
    const query = PostgresQueryRunner.prototype.query;
    jest.spyOn(PostgresQueryRunner.prototype, 'query').mockImplementation(async function (
      this: PostgresQueryRunner,
      sql: string,
      params?: Parameters<PostgresQueryRunner['query']>[1],
      structured?: boolean,
    ) {
      if (recording.getStore() && /^\s*(SELECT|WITH)\b/i.test(sql)) {
        const [{ 'QUERY PLAN': plan }] = (await query.call(this, `EXPLAIN (FORMAT JSON) ${sql}`, params)) as {
          'QUERY PLAN': { Plan: PlanNode; JIT?: unknown }[];
        }[];
        explained.push({ sql, access: [...bigTableAccess(plan[0].Plan), ...(plan[0].JIT ? ['JIT compiled'] : [])] });
      }
      return query.call(this, sql, params, structured) as Promise<unknown>;
    });
    const retention = worker.get(RetentionRepository);
    const deleteDeliveries = retention.deleteDeliveries.bind(retention);
    jest.spyOn(retention, 'deleteDeliveries').mockImplementation(async (before, limit) => {
      const gone = await deleteDeliveries(before, limit);
      batches.push({ kind: 'deliveries', deleted: gone.deliveries });
      return gone;
    });
    const deleteEvents = retention.deleteEvents.bind(retention);
    jest.spyOn(retention, 'deleteEvents').mockImplementation(async (before, limit) => {
      const gone = await deleteEvents(before, limit);
      batches.push({ kind: 'events', deleted: gone });
      return gone;
    });
  }, 60_000);

  afterAll(async () => {
    jest.restoreAllMocks();
    await db?.end();
    await worker?.close();
    await operatorApp?.close();
    await removeTestKeys(config.queuePrefix, config.databaseUrl);
  });

  /** `count` orders `ageDays` old, paid then, on `channel`. Answers their ids. */
  async function orders(count: number, ageDays: number, options: { channel?: number; orderType?: 1 | 2; orderStatus?: string } = {}): Promise<string[]> {
    const firstNo = nextOrderNo;
    nextOrderNo += count;
    return insertAgedOrders(db, {
      merchantId,
      channelId: options.channel ?? channelId,
      firstNo,
      count,
      ageDays,
      orderType: options.orderType,
      orderStatus: options.orderStatus,
    });
  }

  /**
   * `events` events spread over `orderIds`, written between `ageDays` and `ageDays` + `spreadDays`
   * days ago (so the retention indexes have a spread to walk), each with one delivery of `deliveryStatus`
   * that ended when it was written, each with ATTEMPTS attempts: one INSERT ... SELECT per table.
   *
   * Loaded as a bulk load would be, consistent by construction: events and attempts without their
   * foreign-key checks (session_replication_role = replica: neither table has a trigger of its own),
   * deliveries with every trigger on (the status counters count them).
   */
  async function history(orderIds: string[], events: number, ageDays: number, options: { deliveryStatus?: string; spreadDays?: number } = {}): Promise<void> {
    const tag = `batch-${nextOrderNo++}`;
    const withoutForeignKeyChecks = async (sql: string, params: unknown[]) => {
      await db.query('BEGIN');
      await db.query('SET LOCAL session_replication_role = replica');
      await db.query(sql, params);
      await db.query('COMMIT');
    };
    await withoutForeignKeyChecks(
      `INSERT INTO order_events (id, order_id, merchant_id, type, payload, created_at)
       SELECT gen_random_uuid(), ($1::bigint[])[1 + g % cardinality($1::bigint[])], $2, 'order.paid', jsonb_build_object('tag', $5::text),
              now() - make_interval(days => $3) - make_interval(secs => (g * $6 * 86400.0 / $4)::float8)
         FROM generate_series(0, $4::int - 1) g`,
      [orderIds, merchantId, ageDays, events, tag, options.spreadDays ?? 0],
    );
    await db.query(
      `INSERT INTO callback_deliveries (id, event_id, event_seq, order_id, merchant_id, status, attempts_made, next_attempt_at, notify_url, destination, created_at, updated_at)
       SELECT gen_random_uuid(), e.id, e.seq, e.order_id, e.merchant_id, $2, $3, e.created_at, 'https://shop.example/notify', 'https://shop.example:443', e.created_at, e.created_at
         FROM order_events e WHERE e.payload->>'tag' = $1`,
      [tag, options.deliveryStatus ?? 'succeeded', ATTEMPTS],
    );
    await withoutForeignKeyChecks(
      `INSERT INTO callback_attempts (delivery_id, number, attempted_at, http_status, duration_ms)
       SELECT d.id, n, d.created_at, 200, 5
         FROM order_events e JOIN callback_deliveries d ON d.event_id = e.id CROSS JOIN generate_series(1, $2::int) n WHERE e.payload->>'tag' = $1`,
      [tag, ATTEMPTS],
    );
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

  /** What a test has left in the three tables. */
  async function totals(): Promise<{ events: number; deliveries: number; attempts: number }> {
    const { rows } = await db.query<{ events: number; deliveries: number; attempts: number }>(
      `SELECT (SELECT count(*)::int FROM order_events) AS events, (SELECT count(*)::int FROM callback_deliveries) AS deliveries,
              (SELECT count(*)::int FROM callback_attempts) AS attempts`,
    );
    return rows[0];
  }

  /** The deliveries gauge's figures against a count over the table: the counters' triggers followed every insert and batch delete. */
  async function expectStatusCountsExact(): Promise<void> {
    const { rows } = await db.query<{ status: string; count: number }>('SELECT status, count(*)::int AS count FROM callback_deliveries GROUP BY status');
    const counted = Object.fromEntries(rows.map((r) => [r.status, r.count]));
    const figures = Object.fromEntries(Object.entries(await worker.get(CallbackFiguresRepository).statusCounts()).filter(([, n]) => n !== 0));
    expect(figures).toEqual(counted);
  }

  /** Sweeps until one deletes nothing; answers each sweep's batch count. */
  async function sweepUntilDone(): Promise<number[]> {
    const perSweep: number[] = [];
    for (let i = 0; i < 100; i++) {
      const result = await recording.run(true, () => worker.get(RetentionSweep).sweep());
      perSweep.push(result.batches);
      if (result.deliveriesDeleted + result.eventsDeleted === 0) return perSweep;
    }
    throw new Error('retention did not finish in 100 sweeps');
  }

  /** The plan of each distinct statement the gauges run (each query of CallbackFiguresRepository a gauge calls). */
  async function gaugePlans(): Promise<Map<string, string[]>> {
    explained = [];
    const deliveries = worker.get(CallbackFiguresRepository);
    await recording.run(true, async () => {
      await deliveries.deliveryLagSeconds();
      await deliveries.openCircuitCount();
      await deliveries.circuitFigures();
      await deliveries.statusCounts();
    });
    return new Map(explained.map((e) => [e.sql, e.access]));
  }

  /** The plan of each distinct retention statement, checked the same for every batch that ran it. */
  function retentionPlans(): Map<string, string[]> {
    const plans = new Map<string, string[]>();
    for (const { sql, access } of explained) {
      // Every batch of a statement reads the big tables the same way.
      expect([sql.slice(0, 80), access]).toEqual([sql.slice(0, 80), plans.get(sql) ?? access]);
      plans.set(sql, access);
    }
    return plans;
  }

  /**
   * A plan's shape: per access to a big table, the table and whether an index finds its rows. Which
   * of two partial indexes on the few pending deliveries, or index against bitmap scan, is the
   * planner's free choice; reading a table whole is not.
   */
  function shapes(plans: Map<string, string[]>): Map<string, string[]> {
    return new Map([...plans].map(([sql, access]) => [sql, access.map((a) => a.replace(/^(Index|Index Only|Bitmap Heap) Scan on (\w+).*$/, '$2 by index'))]));
  }

  /** Plans that read a big table without an index. */
  function scans(plans: Map<string, string[]>): string[] {
    return [...plans.values()].flat().filter((access) => !/^(Index|Index Only|Bitmap Index) Scan|^Bitmap Heap Scan|^ModifyTable/.test(access));
  }

  it('deletes a million old rows in bounded batches, keeps what is still needed, and reads the big tables through indexes at any size', async () => {
    const defaults = { batch: tuning.retentionBatch, perSweep: tuning.retentionBatchesPerSweep };

    // What must survive: recent history, and old history a pending delivery, an open refund, an unsettled payout or an unreconciled day still needs.
    const recent = await orders(25, 80);
    await history(recent, RECENT.events, 1, { spreadDays: 80 });
    const pending = await orders(1, 200);
    await history(pending, 1, 200, { deliveryStatus: 'pending' });
    const refunding = await orders(1, 200);
    await history(refunding, 3, 200);
    await db.query(
      `INSERT INTO refunds (refund_no, merchant_id, order_id, order_no, merchant_refund_no, refund_fen, request_hash, status, created_at, updated_at)
       SELECT 'R' || substr(order_no, 2), merchant_id, id, order_no, 'r-1', 100, 'h', 'processing', now(), now() FROM orders WHERE id = $1`,
      [refunding[0]],
    );
    const paying = await orders(1, 200, { orderType: 2, orderStatus: 'paid' });
    await history(paying, 2, 200);
    await db.query(
      `INSERT INTO payouts (order_id, payee_name, payee_account_enc, payee_account_masked, payee_bank, attempted_at) VALUES ($1, 'x', 'sealed', '****1234', 'b', now() - interval '200 days')`,
      [paying[0]],
    );
    const unreconciled = await orders(1, 201, { channel: reconciledChannelId });
    await history(unreconciled, 2, 201);
    const reconciledDay = await orders(1, 202, { channel: reconciledChannelId });
    await history(reconciledDay, 2, 202);
    await db.query(
      `INSERT INTO recon_runs (channel_id, bill_date, status, bill_format, bill_sha256, bill_raw)
       SELECT $1, (paid_at AT TIME ZONE 'Asia/Shanghai')::date, 'completed', 'sandbox', repeat('a', 64), '\\x'::bytea FROM orders WHERE id = $2`,
      [reconciledChannelId, reconciledDay[0]],
    );
    const kept = [...recent, ...pending, ...refunding, ...paying, ...unreconciled];
    const keptBefore = await left(kept);
    const old = await orders(OLD_ORDERS, 100);

    // A thousand old rows: the plans to compare with.
    await history(old, SMALL.events, 91, { spreadDays: 300 });
    await db.query('ANALYZE');
    const smallGauges = await gaugePlans();
    explained = [];
    batches = [];
    expect(await sweepUntilDone()).toEqual([2, 2]);
    const smallRetention = retentionPlans();
    expect(smallRetention.size).toBe(3);
    expect(await totals()).toEqual(keptBefore);

    // A million old rows.
    await history(old, LARGE.events, 91, { spreadDays: 300 });
    const seeded = await totals();
    expect(seeded).toEqual({
      events: keptBefore.events + LARGE.events,
      deliveries: keptBefore.deliveries + LARGE.deliveries,
      attempts: keptBefore.attempts + LARGE.attempts,
    });
    await db.query('ANALYZE');
    await expectStatusCountsExact();
    const largeGauges = await gaugePlans();
    explained = [];
    batches = [];
    const perSweep = await sweepUntilDone();
    const largeRetention = retentionPlans();

    // Batches: never more than the batch size, never more than the per-sweep cap, and sweeps carry on until nothing old is left.
    expect(Math.max(...batches.map((b) => b.deleted))).toBe(defaults.batch);
    expect(perSweep.every((n) => n <= defaults.perSweep)).toBe(true);
    // While a backlog remains each sweep runs its full share, then stops: the next sweep carries on.
    expect(perSweep.slice(0, -2).every((n) => n === defaults.perSweep)).toBe(true);
    const fullBatches = (LARGE.deliveries + LARGE.events) / defaults.batch;
    expect(perSweep.length).toBeGreaterThanOrEqual(Math.ceil(fullBatches / defaults.perSweep));
    expect(batches.filter((b) => b.kind === 'deliveries').reduce((sum, b) => sum + b.deleted, 0)).toBe(LARGE.deliveries);
    expect(batches.filter((b) => b.kind === 'events').reduce((sum, b) => sum + b.deleted, 0)).toBe(LARGE.events);

    // The old rows are gone, whatever was still needed is not, and the orders themselves stay.
    expect(await totals()).toEqual(keptBefore);
    await expectStatusCountsExact();
    // A status change moves a delivery between counters; other updates (claims, leases, attempts) leave them.
    await db.query(`UPDATE callback_deliveries SET status = 'failed' WHERE order_id = ANY($1::bigint[])`, [pending]);
    await db.query(`UPDATE callback_deliveries SET attempts_made = attempts_made + 1 WHERE order_id = ANY($1::bigint[])`, [recent]);
    await expectStatusCountsExact();
    await db.query(`UPDATE callback_deliveries SET status = 'pending' WHERE order_id = ANY($1::bigint[])`, [pending]);
    await expectStatusCountsExact();
    // The callbacks sweep folds the appended changes to one row per status, with the same figures.
    const countRows = async (): Promise<{ rows: number; statuses: number }> =>
      (
        await db.query<{ rows: number; statuses: number }>(
          'SELECT count(*)::int AS rows, count(DISTINCT status)::int AS statuses FROM callback_delivery_counts',
        )
      ).rows[0];
    expect((await countRows()).rows).toBeGreaterThan(3);
    await worker.get(CallbackSweeper).sweep();
    await expectStatusCountsExact();
    const folded = await countRows();
    expect(folded.rows).toBe(folded.statuses);
    expect(await left(old)).toEqual({ events: 0, deliveries: 0, attempts: 0 });
    expect(await left(reconciledDay)).toEqual({ events: 0, deliveries: 0, attempts: 0 });
    expect(await left(kept)).toEqual(keptBefore);
    const { rows } = await db.query<{ count: number }>(`SELECT count(*)::int AS count FROM orders WHERE id = ANY($1::bigint[])`, [old]);
    expect(rows[0].count).toBe(OLD_ORDERS);

    // Cost: no statement reads a big table without an index, and each reads them at a million rows as it did at a thousand.
    expect(scans(smallGauges)).toEqual([]);
    expect(scans(largeGauges)).toEqual([]);
    expect(scans(smallRetention)).toEqual([]);
    expect(scans(largeRetention)).toEqual([]);
    expect(shapes(largeGauges)).toEqual(shapes(smallGauges));
    expect(shapes(largeRetention)).toEqual(shapes(smallRetention));
  }, 240_000);
});
