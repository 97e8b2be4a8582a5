import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { OrderRepository, dataSourceOptions, runMigrations } from '@app/db';
import { OrderLifecycle } from '@app/orders';
import { MIGRATIONS } from '../migrations';
import { OrderCountSlots1764410000000 } from '../migrations/1764410000000-order-count-slots';
import { ORDER_COUNT_SLOTS } from '@app/db/sql/order-counts-apply';
import { createEmptyTestDatabase } from './helpers/database';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { createOrder, sql } from './helpers/orders';

/** orderQueryList's total without a time bound comes from order_counts, kept by triggers: it must always equal a real count. */
describe('order counts behind orderQueryList totals', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(() => api.close());

  it('agree with the orders table through creation, payment, cancellation, completion and sell orders', async () => {
    const { merchant, channels } = await merchantWithChannels(api.operator);
    const other = await merchantWithChannels(api.operator);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await createOrder(api.app, merchant, {
        order_type: 1,
        cny_amount: `${i + 1}.00`,
        paychannel_id: channels.remotepay,
        paychannel_paymethod: 'alipay',
      });
      expect(res.body.code).toBe(1);
      ids.push(String((await sql(api.app).query('SELECT id FROM orders WHERE order_no = $1', [res.body.data.order_no]))[0].id));
    }
    await createOrder(api.app, other.merchant, { order_type: 1, cny_amount: '1.00', paychannel_id: other.channels.remotepay, paychannel_paymethod: 'alipay' });
    const lifecycle = api.app.get(OrderLifecycle);
    // Concurrent transitions of different orders touch the same counter rows; paid ones stay paid
    // (final: false, as an epay order waits for its confirm job) until confirmed below.
    await Promise.all([
      ...ids.slice(0, 5).map((id, i) => lifecycle.markPaid(id, { amountFen: (i + 1) * 100, channelTradeNo: null }, { final: false })),
      ...ids.slice(5, 8).map((id) => lifecycle.markClosedByChannel(id)),
    ]);
    await Promise.all(ids.slice(0, 3).map((id) => lifecycle.confirm(id)));
    // A late payment of a cancelled order moves it from cancelled to paid.
    expect(await lifecycle.markPaid(ids[5], { amountFen: 600, channelTradeNo: null }, { final: false })).toBe('late_paid');
    // Sell orders exist in the data model and in queries.
    await sql(api.app).query(
      `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, cny_fen, service_rate, service_fen, deposit_rate, deposit_fen,
                           merchant_actual_fen, request_hash, expires_at, created_at, updated_at)
       SELECT '9' || lpad(g::text, 21, '0'), $1, $2, 2, 'completed', 100, 0, 0, 0, 0, 100, 'x', now(), now(), now() FROM generate_series(1, 4) g`,
      [merchant.id, channels.remotepay],
    );

    const counts = async (filter: Record<string, unknown>) =>
      (await post<{ total: number }>(api.app, '/api/merchant/orderQueryList', signed(merchant, filter))).body.data.total;
    const actual = async (where: string, args: unknown[]) =>
      Number((await sql(api.app).query(`SELECT count(*) AS n FROM orders WHERE merchant_id = $1 ${where}`, [merchant.id, ...args]))[0].n);

    expect(await counts({})).toBe(16);
    expect(await counts({})).toBe(await actual('', []));
    for (const status of ['pending', 'paid', 'confirmed', 'completed', 'cancelled']) {
      expect([status, await counts({ status })]).toEqual([status, await actual('AND status = $2', [status])]);
    }
    expect(await counts({ order_type: 2 })).toBe(4);
    expect(await counts({ order_type: 1, status: 'completed' })).toBe(3);
    expect(await counts({ status: 'paid' })).toBe(3);
    expect(await counts({ status: 'cancelled' })).toBe(2);
    // The whole table agrees, every merchant and group.
    const drift = await sql(api.app).query(
      `SELECT * FROM (SELECT merchant_id, status, order_type, count(*) AS n FROM orders GROUP BY 1, 2, 3) o
        FULL JOIN (SELECT merchant_id, status, order_type, sum(n) AS n FROM order_counts GROUP BY 1, 2, 3) c
        USING (merchant_id, status, order_type) WHERE coalesce(o.n, 0) <> coalesce(c.n, 0)`,
    );
    expect(drift).toEqual([]);
  });

  it('answers a page past the end with an empty list and the real total', async () => {
    const { merchant, channels } = await merchantWithChannels(api.operator);
    await createOrder(api.app, merchant, { order_type: 1, cny_amount: '1.00', paychannel_id: channels.remotepay, paychannel_paymethod: 'alipay' });
    const res = await post<{ list: unknown[]; total: number; page: number }>(api.app, '/api/merchant/orderQueryList', signed(merchant, { page: 3, limit: 1 }));
    expect(res.body.data).toMatchObject({ list: [], total: 1, page: 3 });
  });
});

/** Every counter key, its slots summed, against count(*) over orders: the rows that disagree. */
function drift(db: { query(sql: string): Promise<unknown[]> }): Promise<unknown[]> {
  return db.query(
    `SELECT 'day' AS counter, * FROM (
       SELECT merchant_id, (created_at AT TIME ZONE 'UTC')::date AS day, status, order_type, count(*) AS n FROM orders GROUP BY 1, 2, 3, 4) o
       FULL JOIN (SELECT merchant_id, day, status, order_type, sum(n) AS n FROM order_day_counts GROUP BY 1, 2, 3, 4) c
       USING (merchant_id, day, status, order_type) WHERE coalesce(o.n, 0) <> coalesce(c.n, 0)
     UNION ALL
     SELECT 'total', merchant_id, NULL, status, order_type, o.n, c.n FROM (
       SELECT merchant_id, status, order_type, count(*) AS n FROM orders GROUP BY 1, 2, 3) o
       FULL JOIN (SELECT merchant_id, status, order_type, sum(n) AS n FROM order_counts GROUP BY 1, 2, 3) c
       USING (merchant_id, status, order_type) WHERE coalesce(o.n, 0) <> coalesce(c.n, 0)`,
  );
}

/** `count` orders of one merchant as createOrder inserts them (pending, today), with order_nos from `prefix`. */
const INSERT_ORDERS = `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, cny_fen, service_rate, service_fen, deposit_rate, deposit_fen,
                                       merchant_actual_fen, request_hash, expires_at, created_at, updated_at)
  SELECT $3 || lpad(g::text, 22 - length($3), '0'), $1, $2, 1, 'pending', 100, 0, 0, 0, 0, 100, 'x', now(), now(), now() FROM generate_series(1, $4::int) g`;

describe('order counters of one merchant under concurrent sessions (no hot row)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(() => api.close());

  /** A session of its own whose counter slot is none of `taken`, so it never shares a counter row with theirs. */
  async function sessionOutside(taken: number[]): Promise<{ client: Client; slot: number }> {
    for (;;) {
      const client = new Client({ connectionString: api.databaseUrl });
      await client.connect();
      const [{ slot }] = (await client.query(`SELECT pg_backend_pid() % ${ORDER_COUNT_SLOTS} AS slot`)).rows;
      if (!taken.includes(slot)) return { client, slot };
      await client.end();
    }
  }

  it('lets a second session insert and move the same merchant’s orders while another holds its counters uncommitted', async () => {
    const { merchant, channels } = await merchantWithChannels(api.operator);
    const { client: first, slot } = await sessionOutside([]);
    const { client: second } = await sessionOutside([slot]);
    try {
      await first.query(INSERT_ORDERS, [merchant.id, channels.remotepay, '71', 3]);
      await first.query('BEGIN');
      await first.query(INSERT_ORDERS, [merchant.id, channels.remotepay, '72', 2]);
      await first.query(`UPDATE orders SET status = 'paid' WHERE order_no LIKE '71%' AND merchant_id = $1 AND order_no <= '71' || lpad('1', 20, '0')`, [
        merchant.id,
      ]);
      // The first session now holds the merchant's counter rows of its slot. Waiting on them would end in 55P03, not hang.
      await second.query(`SET lock_timeout = '2s'`);
      await second.query('BEGIN');
      await second.query(INSERT_ORDERS, [merchant.id, channels.remotepay, '73', 4]);
      await second.query(
        `UPDATE orders SET status = 'paid' WHERE order_no LIKE '71%' AND merchant_id = $1 AND status = 'pending' AND order_no > '71' || lpad('1', 20, '0')`,
        [merchant.id],
      );
      await second.query('COMMIT');
      await first.query('COMMIT');
    } finally {
      await first.end();
      await second.end();
    }
    const list = async (filter: Record<string, unknown>) =>
      (await post<{ total: number }>(api.app, '/api/merchant/orderQueryList', signed(merchant, filter))).body.data.total;
    expect(await list({})).toBe(9);
    expect(await list({ status: 'paid' })).toBe(3);
    expect(await list({ status: 'pending' })).toBe(6);
    const today = Math.floor(Date.now() / 1000);
    expect(await list({ start_time: today - 86_400, end_time: today + 86_400, status: 'pending' })).toBe(6);
    expect(await drift(sql(api.app))).toEqual([]);
  });

  it('stay exact through concurrent createOrder requests and transitions of one merchant', async () => {
    const { merchant, channels } = await merchantWithChannels(api.operator);
    const created = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        createOrder(api.app, merchant, { cny_amount: `${i + 1}.00`, paychannel_id: channels.remotepay, paychannel_paymethod: 'alipay' }),
      ),
    );
    expect(created.map((r) => r.body.code)).toEqual(created.map(() => 1));
    const ids: string[] = (await sql(api.app).query('SELECT id FROM orders WHERE merchant_id = $1 ORDER BY id', [merchant.id])).map((r: { id: string }) =>
      String(r.id),
    );
    const lifecycle = api.app.get(OrderLifecycle);
    const amounts = new Map<string, number>(
      (await sql(api.app).query('SELECT id, cny_fen FROM orders WHERE merchant_id = $1', [merchant.id])).map((r: { id: string; cny_fen: string }) => [
        String(r.id),
        Number(r.cny_fen),
      ]),
    );
    // Inserts of a second batch race the transitions of the first.
    const [more] = await Promise.all([
      Promise.all(Array.from({ length: 20 }, () => createOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: channels.remotepay }))),
      Promise.all(ids.slice(0, 25).map((id) => lifecycle.markPaid(id, { amountFen: amounts.get(id)!, channelTradeNo: null }, { final: false }))),
      Promise.all(ids.slice(25, 35).map((id) => lifecycle.markClosedByChannel(id))),
    ]);
    expect(more.map((r) => r.body.code)).toEqual(more.map(() => 1));
    await Promise.all(ids.slice(0, 10).map((id) => lifecycle.confirm(id)));
    const totals = async (filter: Record<string, unknown>) =>
      (await post<{ total: number }>(api.app, '/api/merchant/orderQueryList', signed(merchant, filter))).body.data.total;
    const actual = async (status: string) =>
      Number((await sql(api.app).query('SELECT count(*) AS n FROM orders WHERE merchant_id = $1 AND status = $2', [merchant.id, status]))[0].n);
    expect(await totals({})).toBe(60);
    for (const status of ['pending', 'paid', 'confirmed', 'cancelled']) expect([status, await totals({ status })]).toEqual([status, await actual(status)]);
    expect(await totals({ status: 'cancelled' })).toBe(10);
    expect(await drift(sql(api.app))).toEqual([]);
  });
});

describe('folding past days of order_day_counts into one slot (the worker sweep)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(() => api.close());

  it('leaves one row per key for days before yesterday, today untouched, totals exact, and skips rows a writer holds', async () => {
    const db = sql(api.app);
    const { merchant, channels } = await merchantWithChannels(api.operator);
    const slotRows = (where: string): Promise<{ day: string; keys: number; rows: number }[]> =>
      db.query(
        `SELECT day::text, count(DISTINCT (status, order_type))::int AS keys, count(*)::int AS rows FROM order_day_counts
          WHERE merchant_id = $1 AND ${where} GROUP BY day ORDER BY day`,
        [merchant.id],
      );
    // Four sessions, so four slots, write orders five days ago and today.
    const sessions = await Promise.all(Array.from({ length: 4 }, () => new Client({ connectionString: api.databaseUrl })));
    await Promise.all(sessions.map((c) => c.connect()));
    const fiveDaysAgo = `UPDATE orders SET created_at = created_at - interval '5 days' WHERE order_no LIKE $1 || '%'`;
    try {
      for (const [i, client] of sessions.entries()) {
        await client.query(INSERT_ORDERS, [merchant.id, channels.remotepay, `6${i}`, 3]);
        await client.query(fiveDaysAgo, [`6${i}`]);
        await client.query(INSERT_ORDERS, [merchant.id, channels.remotepay, `5${i}`, 2]);
      }
      const slotOf: number[] = (await Promise.all(sessions.map((c) => c.query(`SELECT pg_backend_pid() % ${ORDER_COUNT_SLOTS} AS slot`)))).map(
        (r) => r.rows[0].slot,
      );
      const [past] = await slotRows(`day < current_date - 1`);
      expect(past.rows).toBeGreaterThan(past.keys);

      // A writer in the middle of moving a past order holds its slot's rows of that day (a slot the fold empties, not slot 0).
      const w = slotOf.findIndex((slot) => slot !== 0);
      await sessions[w].query('BEGIN');
      await sessions[w].query(`UPDATE orders SET status = 'cancelled' WHERE order_no LIKE $2 || '%' AND merchant_id = $1 AND right(order_no, 1) = '1'`, [
        merchant.id,
        `6${w}`,
      ]);
      const repository = api.app.get(OrderRepository);
      expect(await repository.foldPastDayCountSlots(1000)).toBeGreaterThan(0);
      await sessions[w].query('COMMIT');
      expect(await drift(db)).toEqual([]);
      await repository.foldPastDayCountSlots(1000);

      const [folded] = await slotRows(`day < current_date - 1`);
      expect(folded).toEqual({ day: past.day, keys: 2, rows: 2 });
      expect(await db.query(`SELECT DISTINCT slot FROM order_day_counts WHERE merchant_id = $1 AND day < current_date - 1`, [merchant.id])).toEqual([
        { slot: 0 },
      ]);
      const [today] = await slotRows(`day >= current_date - 1`);
      expect(today.rows).toBe(new Set(slotOf).size);
      expect(await drift(db)).toEqual([]);
      const total = async (filter: Record<string, unknown>) =>
        (await post<{ total: number }>(api.app, '/api/merchant/orderQueryList', signed(merchant, filter))).body.data.total;
      const now = Math.floor(Date.now() / 1000);
      expect(await total({ start_time: now - 10 * 86_400, end_time: now - 2 * 86_400 })).toBe(12);
      expect(await total({ start_time: now - 10 * 86_400, end_time: now - 2 * 86_400, status: 'cancelled' })).toBe(1);
    } finally {
      await Promise.all(sessions.map((c) => c.end()));
    }
  });
});

describe('migration OrderCountSlots1764410000000 on a database with orders', () => {
  it('keeps every total exact, counts on in slots afterwards, and down folds the slots back exactly', async () => {
    const url = await createEmptyTestDatabase();
    const before = MIGRATIONS.slice(0, MIGRATIONS.indexOf(OrderCountSlots1764410000000));
    const ds = new DataSource({ ...dataSourceOptions(url, 4), migrations: before });
    await ds.initialize();
    try {
      await ds.runMigrations({ transaction: 'each' });
      const merchants: number[] = [];
      for (const name of ['big shop', 'small shop']) {
        const [{ id }] = await ds.query(`INSERT INTO merchants (name, api_key, api_secret_enc) VALUES ($1, $2, 'sealed') RETURNING id`, [
          name,
          `mk_${name.replace(' ', '')}0123456789ABCDEFGH`.slice(0, 27),
        ]);
        merchants.push(id);
      }
      const [{ id: channel }] = await ds.query(
        `INSERT INTO channels (category, name, pay_method, adapter, config_enc) VALUES ('remotepay', 'c', 'alipay', 'sandbox', 'sealed') RETURNING id`,
      );
      await ds.query(INSERT_ORDERS, [merchants[0], channel, '81', 30]);
      await ds.query(INSERT_ORDERS, [merchants[1], channel, '82', 5]);
      await ds.query(
        `UPDATE orders SET status = 'cancelled', created_at = created_at - interval '3 days' WHERE order_no LIKE '81%' AND right(order_no, 1) IN ('1', '2')`,
      );
      expect(await drift(ds)).toEqual([]);

      // Its migration first; those of later branches follow it on this database.
      expect((await runMigrations(url))[0]).toBe('OrderCountSlots1764410000000');
      expect(await drift(ds)).toEqual([]);
      expect(await ds.query(`SELECT DISTINCT slot FROM order_counts UNION SELECT DISTINCT slot FROM order_day_counts`)).toEqual([{ slot: 0 }]);
      // Writers on several sessions of the pool spread over slots, and the sums stay exact.
      await Promise.all(Array.from({ length: 8 }, (_, w) => ds.transaction((em) => em.query(INSERT_ORDERS, [merchants[0], channel, `9${w}`, 3]))));
      await Promise.all(Array.from({ length: 4 }, (_, w) => ds.query(`UPDATE orders SET status = 'paid' WHERE order_no LIKE '9${w}%'`)));
      expect(await drift(ds)).toEqual([]);

      const runner = ds.createQueryRunner();
      try {
        await runner.startTransaction();
        await new OrderCountSlots1764410000000().down(runner);
        await runner.commitTransaction();
      } finally {
        await runner.release();
      }
      expect(await drift(ds)).toEqual([]);
      await ds.query(INSERT_ORDERS, [merchants[1], channel, '83', 2]);
      expect(await drift(ds)).toEqual([]);
      const [{ n }] = await ds.query(`SELECT sum(n)::int AS n FROM order_counts WHERE merchant_id = $1`, [merchants[0]]);
      expect(n).toBe(54);
    } finally {
      await ds.destroy();
    }
  });
});
