import { DataSource } from 'typeorm';
import { type OrderListFilter, OrderRepository } from '@app/db';
import { OrderDayCounts1763900000000 } from '../migrations/1763900000000-order-day-counts';
import { OrderCountSlots1764410000000 } from '../migrations/1764410000000-order-count-slots';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { sql } from './helpers/orders';

const DAY = 86_400;
/** 2026-03-01T00:00:00Z: the orders below sit on six UTC days from here, many right at midnights. */
const D0 = Date.UTC(2026, 2, 1) / 1000;
const STATUSES = ['pending', 'paid', 'confirmed', 'completed', 'cancelled'] as const;

interface Seed {
  orderNo: string;
  /** ISO text to the microsecond. */
  createdAt: string;
  status: string;
  orderType: number;
}

function iso(seconds: number, micros = 0): string {
  return `${new Date(seconds * 1000).toISOString().slice(0, 19)}.${String(micros).padStart(6, '0')}Z`;
}

/**
 * Orders on the edges that matter: exactly at midnight, its last microsecond before, the first
 * and last second of a day, several orders sharing one created_at (order_no breaks the tie), and
 * a spread in between; statuses and types mixed.
 */
function seeds(): Seed[] {
  const out: Omit<Seed, 'orderNo'>[] = [];
  let i = 0;
  const add = (seconds: number, micros = 0, copies = 1) => {
    for (let c = 0; c < copies; c++, i++) out.push({ createdAt: iso(seconds, micros), status: STATUSES[(i * 7) % 5], orderType: i % 4 === 0 ? 2 : 1 });
  };
  for (let d = 0; d < 6; d++) {
    const day = D0 + d * DAY;
    add(day, 0, 3);
    add(day - 1, 999_999, 2);
    add(day, 500_000);
    add(day + 1);
    add(day + DAY - 1, 0, 2);
    add(day + 3600, 123_456);
    for (let k = 1; k <= 40; k++) add(day + ((k * 2_111) % DAY), (k * 7_919) % 1_000_000);
  }
  // order_no deliberately not in created_at order, so ties and near-ties are ordered by the rule, not by insertion.
  return out.map((s, n) => ({ ...s, orderNo: `2026${String((n * 7_907) % 100_000).padStart(10, '0')}${String(n).padStart(8, '0')}` }));
}

async function insertOrders(db: DataSource, merchantId: number, channelId: number, rows: Seed[]): Promise<void> {
  await db.query(
    // A sell order's merchant_actual is what leaves the balance (cny + service), as the amounts CHECK wants.
    `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, payment_method, cny_fen, service_rate, service_fen, deposit_rate,
                         deposit_fen, merchant_actual_fen, request_hash, expires_at, created_at, updated_at)
     SELECT s.order_no, $1, $2, s.order_type, s.status, 'alipay', 100, 0.006, 1, 0, 0, CASE s.order_type WHEN 1 THEN 99 ELSE 101 END, 'x', s.created_at, s.created_at, s.created_at
     FROM unnest($3::varchar[], $4::timestamptz[], $5::varchar[], $6::smallint[]) AS s(order_no, created_at, status, order_type)`,
    [merchantId, channelId, rows.map((r) => r.orderNo), rows.map((r) => r.createdAt), rows.map((r) => r.status), rows.map((r) => r.orderType)],
  );
}

/** The plain statement the list must agree with: every matching row, newest first, then OFFSET. */
async function reference(db: DataSource, merchantId: number, f: OrderListFilter): Promise<{ orderNos: string[]; total: number }> {
  const where = ['merchant_id = $1'];
  const args: unknown[] = [merchantId];
  if (f.status) where.push(`status = $${args.push(f.status)}`);
  if (f.orderType !== undefined) where.push(`order_type = $${args.push(f.orderType)}`);
  if (f.startTime !== undefined) where.push(`created_at >= to_timestamp($${args.push(f.startTime)})`);
  if (f.endTime !== undefined) where.push(`created_at < to_timestamp($${args.push(f.endTime + 1)})`);
  const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM orders WHERE ${where.join(' AND ')}`, args);
  const rows: { order_no: string }[] = await db.query(
    `SELECT order_no FROM orders WHERE ${where.join(' AND ')} ORDER BY created_at DESC, order_no DESC OFFSET $${args.push((f.page - 1) * f.limit)} LIMIT $${args.push(f.limit)}`,
    args,
  );
  return { orderNos: rows.map((r) => r.order_no), total: n };
}

/** Counter keys (their slots summed) that disagree with a count(*) over orders grouped the same way. */
function drift(db: DataSource): Promise<unknown[]> {
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

describe('orderQueryList against a plain ORDER BY ... OFFSET (SPEC 5)', () => {
  let api: TestApi;
  let db: DataSource;
  let merchantId: number;
  let repository: OrderRepository;
  let credentials: Awaited<ReturnType<typeof merchantWithChannels>>['merchant'];

  beforeAll(async () => {
    api = await startTestApi();
    db = sql(api.app);
    repository = api.app.get(OrderRepository);
    const made = await merchantWithChannels(api.operator);
    credentials = made.merchant;
    merchantId = made.merchant.id;
    await insertOrders(db, merchantId, made.channels.remotepay, seeds());
    // Another merchant's orders on the same days must never count.
    const other = await merchantWithChannels(api.operator);
    await insertOrders(
      db,
      other.merchant.id,
      other.channels.remotepay,
      seeds().map((s) => ({ ...s, orderNo: `9${s.orderNo.slice(1)}` })),
    );
  });
  afterAll(() => api.close());

  const windows: [string, number | undefined, number | undefined][] = [
    ['no window', undefined, undefined],
    ['from a midnight to the second before another', D0 + DAY, D0 + 4 * DAY - 1],
    ['from a midnight to a midnight (its first second included)', D0 + DAY, D0 + 4 * DAY],
    ['from the second after a midnight', D0 + DAY + 1, D0 + 4 * DAY - 2],
    ['from the second before a midnight', D0 + DAY - 1, D0 + 4 * DAY + 1],
    ['within one day', D0 + 2 * DAY + 100, D0 + 2 * DAY + 50_000],
    ['across one midnight', D0 + 3 * DAY - 2, D0 + 3 * DAY + 1],
    ['one second holding several orders', D0 + 2 * DAY, D0 + 2 * DAY],
    ['one second before a midnight', D0 + 2 * DAY - 1, D0 + 2 * DAY - 1],
    ['open end', D0 + 2 * DAY + 1, undefined],
    ['open start', undefined, D0 + 3 * DAY],
    ['holding nothing', D0 + 20 * DAY, D0 + 21 * DAY],
  ];

  it.each(windows)('agrees on the total and every page, for every status and type: %s', async (_name, startTime, endTime) => {
    for (const status of [undefined, 'pending', 'completed'] as const) {
      for (const orderType of [undefined, 2]) {
        for (const limit of [7, 100]) {
          const base = { status, orderType, startTime, endTime, limit };
          const { total } = await reference(db, merchantId, { ...base, page: 1 });
          // Every page to one past the last.
          for (let page = 1; page <= Math.floor(total / limit) + 2; page++) {
            const expected = await reference(db, merchantId, { ...base, page });
            const actual = await repository.list(merchantId, { ...base, page });
            expect([base, page, actual.total, actual.rows.map((r) => r.orderNo)]).toEqual([base, page, expected.total, expected.orderNos]);
          }
        }
      }
    }
  });

  it('counts a window whose bounds fall on midnights exactly: its first second in, the second after its end out', async () => {
    const count = async (startTime: number, endTime: number) => (await repository.list(merchantId, { startTime, endTime, page: 1, limit: 1 })).total;
    // Each midnight's first second holds 4 orders (3 at .000000, 1 at .500000); the second before it 4 (2 at .000000, 2 at .999999).
    expect(await count(D0 + DAY, D0 + DAY)).toBe(4);
    expect(await count(D0 + DAY - 1, D0 + DAY - 1)).toBe(4);
    const wholeDay = await count(D0 + DAY, D0 + 2 * DAY - 1);
    expect(await count(D0 + DAY, D0 + 2 * DAY)).toBe(wholeDay + 4);
    expect(await count(D0 + DAY - 1, D0 + 2 * DAY - 1)).toBe(wholeDay + 4);
    expect(wholeDay).toBe((await reference(db, merchantId, { startTime: D0 + DAY, endTime: D0 + 2 * DAY - 1, page: 1, limit: 1 })).total);
  });

  it('answers a deep page through the API as the plain statement does', async () => {
    const params = { status: 'completed', start_time: D0 + DAY - 1, end_time: D0 + 5 * DAY + 1, page: 4, limit: 5 };
    const res = await post<{ list: { order_no: string }[]; total: number; page: number; limit: number }>(
      api.app,
      '/api/merchant/orderQueryList',
      signed(credentials, params),
    );
    const expected = await reference(db, merchantId, { status: 'completed', startTime: params.start_time, endTime: params.end_time, page: 4, limit: 5 });
    expect(res.body.data).toMatchObject({ total: expected.total, page: 4, limit: 5 });
    expect(res.body.data.list.map((o) => o.order_no)).toEqual(expected.orderNos);
    expect(expected.orderNos).toHaveLength(5);
  });

  it('loads the listed rows as TypeORM loads an order', async () => {
    const { rows } = await repository.list(merchantId, { status: 'paid', orderType: 2, page: 1, limit: 3 });
    expect(rows).toHaveLength(3);
    for (const row of rows) expect(row).toEqual(await repository.findByOrderNo(merchantId, row.orderNo));
  });

  it('moves an order between day counters when its created_at, status or type changes', async () => {
    const [order] = await db.query(`SELECT order_no FROM orders WHERE merchant_id = $1 AND created_at = $2::timestamptz LIMIT 1`, [merchantId, iso(D0 + DAY)]);
    await db.query(`UPDATE orders SET created_at = created_at - interval '1 microsecond', status = 'cancelled', order_type = 2 WHERE order_no = $1`, [
      order.order_no,
    ]);
    expect(await drift(db)).toEqual([]);
    const window = { startTime: D0, endTime: D0 + DAY - 1, status: 'cancelled' as const, page: 1, limit: 100 };
    const listed = await repository.list(merchantId, window);
    expect(listed.rows.map((r) => r.orderNo)).toContain(order.order_no);
    expect(listed.total).toBe((await reference(db, merchantId, window)).total);
  });
});

describe('order_day_counts under concurrent writers', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(() => api.close());

  it('equal count(*) by merchant, UTC day, status and type after concurrent inserts, transitions and moves across midnight', async () => {
    const db = sql(api.app);
    const merchants = [await merchantWithChannels(api.operator), await merchantWithChannels(api.operator)];
    let serial = 0;
    const nearMidnight = (k: number) => iso(D0 + (k % 3) * DAY + ((k * 37) % 5) - 2, (k * 104_729) % 1_000_000);
    /**
     * One writer's statement, in a transaction of its own as the service's writes are: inserts near
     * midnights, or updates of random orders. The session's time zone is far from UTC: the day of
     * an order must not depend on it.
     */
    const statement = (writer: number, round: number) =>
      db.transaction(async (em) => {
        await em.query(`SET LOCAL TimeZone = 'Pacific/Kiritimati'`);
        await write(em as unknown as DataSource, writer, round);
      });
    const write = async (target: DataSource, writer: number, round: number) => {
      const { merchant, channels } = merchants[(writer + round) % 2];
      switch (round % 4) {
        case 0: {
          const rows = Array.from({ length: 1 + (writer % 3) }, () => {
            const n = ++serial;
            return {
              orderNo: `3${String(writer).padStart(3, '0')}${String(n).padStart(18, '0')}`,
              createdAt: nearMidnight(n),
              status: 'pending',
              orderType: 1 + (n % 2),
            };
          });
          return insertOrders(target, merchant.id, channels.remotepay, rows);
        }
        case 1:
          return target.query(`UPDATE orders SET status = $1 WHERE id IN (SELECT id FROM orders ORDER BY random() LIMIT 3)`, [STATUSES[(writer + round) % 5]]);
        case 2:
          return target.query(
            `UPDATE orders SET created_at = created_at + make_interval(secs => $1) WHERE id IN (SELECT id FROM orders ORDER BY random() LIMIT 2)`,
            [writer % 2 === 0 ? 3 : -3],
          );
        default:
          // The SET list sees the old type: the amounts follow the kind of order they become.
          return target.query(
            `UPDATE orders SET order_type = 3 - order_type,
                    merchant_actual_fen = CASE order_type WHEN 1 THEN cny_fen + service_fen ELSE cny_fen - service_fen - deposit_fen END
              WHERE id IN (SELECT id FROM orders ORDER BY random() LIMIT 2)`,
          );
      }
    };
    const writer = async (w: number) => {
      for (let round = 0; round < 40; round++) {
        // Rows updated in different orders by two statements may deadlock; PostgreSQL aborts one, which retries as a client would.
        for (let attempt = 0; ; attempt++) {
          try {
            await statement(w, round);
            break;
          } catch (err) {
            if ((err as { driverError?: { code?: string } }).driverError?.code !== '40P01' || attempt > 5) throw err;
          }
        }
      }
    };
    await Promise.all(Array.from({ length: 6 }, (_, w) => writer(w)));
    const [{ n }] = await db.query('SELECT count(*)::int AS n FROM orders');
    expect(n).toBeGreaterThanOrEqual(6 * 10);
    expect(await drift(db)).toEqual([]);
    const repository = api.app.get(OrderRepository);
    for (const { merchant } of merchants) {
      for (const window of [{}, { startTime: D0 - 1, endTime: D0 + DAY }, { startTime: D0 + DAY - 2, endTime: D0 + 2 * DAY + 2 }]) {
        const filter = { ...window, page: 2, limit: 3 };
        const actual = await repository.list(merchant.id, filter);
        const expected = await reference(db, merchant.id, filter);
        expect([window, actual.total, actual.rows.map((r) => r.orderNo)]).toEqual([window, expected.total, expected.orderNos]);
      }
    }
  });
});

describe('migration OrderDayCounts1763900000000', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(() => api.close());

  it('counts the orders that exist when it runs, then keeps counting; down restores the order_counts-only trigger', async () => {
    const db = sql(api.app);
    const { merchant, channels } = await merchantWithChannels(api.operator);
    const migration = new OrderDayCounts1763900000000();
    // The counters as this migration left them: before their slots.
    const slots = new OrderCountSlots1764410000000();
    const runner = db.createQueryRunner();
    try {
      await runner.startTransaction();
      await slots.down(runner);
      await migration.down(runner);
      await runner.commitTransaction();
      await insertOrders(db, merchant.id, channels.remotepay, seeds().slice(0, 120));
      const [{ total }] = await db.query(`SELECT sum(n)::int AS total FROM order_counts WHERE merchant_id = $1`, [merchant.id]);
      expect(total).toBe(120);
      await runner.startTransaction();
      await migration.up(runner);
      await slots.up(runner);
      await runner.commitTransaction();
    } finally {
      await runner.release();
    }
    expect(await drift(db)).toEqual([]);
    await insertOrders(db, merchant.id, channels.remotepay, seeds().slice(120, 200));
    await db.query(`UPDATE orders SET status = 'completed' WHERE merchant_id = $1 AND status = 'pending'`, [merchant.id]);
    expect(await drift(db)).toEqual([]);
    const [{ days }] = await db.query(`SELECT sum(n)::int AS days FROM order_day_counts WHERE merchant_id = $1`, [merchant.id]);
    expect(days).toBe(200);
  });
});
