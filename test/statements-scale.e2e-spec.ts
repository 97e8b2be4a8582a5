import { Client } from 'pg';
import { DataSource } from 'typeorm';
import type { Credentials } from '@app/operator';
import { shanghaiDate, shanghaiDayBounds } from '@app/recon';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { PortalClient, inviteAndAccept } from './helpers/portal';

interface StatementAnswer {
  opening_balance: { available_fen: number; deposit_fen: number };
  closing_balance: { available_fen: number; deposit_fen: number };
  movements: { entry_id: string; amount_fen: number; account: string; available_after_fen: number; deposit_after_fen: number }[];
  total: number;
}

interface Plan {
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  'Actual Rows': number;
  Plans?: Plan[];
}

const dayStart = (day: string): Date => shanghaiDayBounds(day)!.from;
const daysBefore = (day: string, n: number): string => shanghaiDate(new Date(dayStart(day).getTime() - n * 86_400_000 + 3_600_000));

/**
 * SPEC 6: a statement's cost does not grow with the merchant's history (balances kept per closed
 * day) nor with the size of its day beyond its page. Measured by what PostgreSQL reads (EXPLAIN
 * ANALYZE's buffers of every query a statementQuery runs), not by time: a merchant with 1,000
 * ledger rows of history and one with 1,000,000 get the same statement of the same day for the
 * same reads; a day of 250,000 movements is answered a page at a time and exported as CSV without
 * any query handing the app more than one batch.
 */
describe('statements at scale: flat in history, a page at a time in the day (real PostgreSQL)', () => {
  let api: TestApi;
  let db: Client;
  let channel: number;
  const today = shanghaiDate(new Date());
  /** A closed day (its statement comes from the kept rows) and today (summed from the ledger's index). */
  const closedDay = daysBefore(today, 2);
  let nextOrderNo = 7_000_000_000;

  /** Every SELECT the app runs while `explaining` is on, EXPLAINed with ANALYZE and BUFFERS; the rows each query hands the app. */
  const plans: Plan[] = [];
  const handed: number[] = [];
  let explaining = false;

  const statement = (merchant: Credentials, date: string, paging: Record<string, unknown> = {}) =>
    post<StatementAnswer>(api.app, '/api/merchant/statementQuery', signed(merchant, { date, ...paging }));

  /** `count` ledger rows spread over the 400 days before `before`, their orders left out (replica mode skips the foreign keys): history a statement must not read. */
  async function history(merchantId: number, count: number, before: string): Promise<void> {
    await db.query(`SET session_replication_role = replica`);
    try {
      await db.query(
        `INSERT INTO ledger_entries (merchant_id, order_id, kind, amount_fen, created_at)
         SELECT $1::int, -($1::int::bigint * 10000000 + g), 'order_credit', 100, $3::timestamptz - make_interval(days => 1 + g % 400, secs => g % 80000)
           FROM generate_series(1, $2::int) g`,
        [merchantId, count, dayStart(before)],
      );
    } finally {
      await db.query(`SET session_replication_role = DEFAULT`);
    }
  }

  /** `orders` completed orders on `day`, each with a credit and a deposit entry: 2 x orders movements. */
  async function dayOfMovements(merchantId: number, day: string, orders: number): Promise<void> {
    const first = nextOrderNo;
    nextOrderNo += orders;
    await db.query(
      `WITH o AS (
         INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, cny_fen, service_rate, service_fen, deposit_rate, deposit_fen, merchant_actual_fen,
                             merchant_order_no, request_hash, paid_at, expires_at, created_at, updated_at)
         SELECT lpad(g::text, 22, '0'), $1, $2, 1, 'completed', 1100, 0, 0, 0.1, 100, 1000, 'shop-' || g, 'h', t, t, t, t
           FROM generate_series($3::bigint, $4::bigint) g, LATERAL (SELECT $5::timestamptz + make_interval(secs => (g - $3) % 80000) AS t) at
         RETURNING id, created_at)
       INSERT INTO ledger_entries (merchant_id, order_id, kind, amount_fen, created_at)
       SELECT $1, o.id, k.kind, k.amount, o.created_at FROM o, (VALUES ('order_credit', 1000), ('order_deposit', 100)) k(kind, amount)`,
      [merchantId, channel, first, first + orders - 1, new Date(dayStart(day).getTime() + 60_000)],
    );
  }

  /** What PostgreSQL read for one statementQuery: every buffer of every query it ran. */
  async function readsOf(merchant: Credentials, date: string): Promise<number> {
    plans.length = 0;
    explaining = true;
    try {
      expect((await statement(merchant, date)).body.code).toBe(1);
    } finally {
      explaining = false;
    }
    expect(plans.length).toBeGreaterThanOrEqual(3);
    return plans.reduce((n, p) => n + p['Shared Hit Blocks'] + p['Shared Read Blocks'], 0);
  }

  beforeAll(async () => {
    api = await startTestApi();
    db = new Client({ connectionString: api.databaseUrl });
    await db.connect();
    const dataSource = api.app.get(DataSource);
    const query = dataSource.query.bind(dataSource);
    // Instrumentation, not a stand-in: every query still runs as the app sent it, on the real database.
    dataSource.query = (async (sql: string, parameters?: unknown[]) => {
      if (explaining && /^\s*(SELECT|WITH)\b/i.test(sql)) {
        const [
          {
            'QUERY PLAN': [explained],
          },
        ] = (await query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, parameters)) as { 'QUERY PLAN': { Plan: Plan }[] }[];
        plans.push(explained.Plan);
      }
      const result: unknown = await query(sql, parameters);
      if (Array.isArray(result)) handed.push(result.length);
      return result;
    }) as DataSource['query'];
    channel = (await merchantWithChannels(api.operator)).channels.processor;
  }, 60_000);

  afterAll(async () => {
    await db?.end();
    await api?.close();
  });

  it('the same statement reads the same from 1,000 or 1,000,000 ledger rows of history, for a closed day and for today', async () => {
    const small = (await merchantWithChannels(api.operator)).merchant;
    const large = (await merchantWithChannels(api.operator)).merchant;
    await history(small.id, 1_000, closedDay);
    await history(large.id, 1_000_000, closedDay);
    for (const merchant of [small, large]) for (const day of [closedDay, today]) await dayOfMovements(merchant.id, day, 60);
    await db.query(`VACUUM ANALYZE ledger_entries`);
    await db.query(`ANALYZE orders`);

    for (const day of [closedDay, today]) {
      // The first statement keeps the closed days (once, an aggregate over the history); what follows is every statement after it.
      for (const merchant of [small, large]) expect((await statement(merchant, day)).body.data.total).toBe(120);
      const [fromSmall, fromLarge] = [await readsOf(small, day), await readsOf(large, day)];
      expect({ day, fromLarge }).toEqual({ day, fromLarge: expect.any(Number) });
      // A deeper index is a block or two per probe, never the history: 1,000 times more rows, at most a third more reads.
      expect(fromLarge).toBeLessThanOrEqual(fromSmall * 1.34 + 10);
    }
    // What the statement used to do, summing the whole history for its opening, reads the history: the same measure sees it grow.
    const oldOpening = async (merchant: Credentials): Promise<number> => {
      const { rows } = await db.query<{ 'QUERY PLAN': { Plan: Plan }[] }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT kind, sum(amount_fen) FROM ledger_entries WHERE merchant_id = $1 AND created_at < $2 GROUP BY kind`,
        [merchant.id, dayStart(closedDay)],
      );
      const plan = rows[0]['QUERY PLAN'][0].Plan;
      return plan['Shared Hit Blocks'] + plan['Shared Read Blocks'];
    };
    expect(await oldOpening(large)).toBeGreaterThan(100 * (await oldOpening(small)));
  }, 600_000);

  it('a day of 250,000 movements: a page of at most 500 at a time, and a CSV of all of them read a batch at a time', async () => {
    const merchant = (await merchantWithChannels(api.operator)).merchant;
    await dayOfMovements(merchant.id, today, 125_000);
    await db.query(`VACUUM ANALYZE ledger_entries`);

    handed.length = 0;
    const firstAnswer = await statement(merchant, today, { limit: 500 });
    expect(firstAnswer.body).toMatchObject({ code: 1 });
    const first = firstAnswer.body.data;
    const lastAnswer = await statement(merchant, today, { limit: 500, page: 500 });
    expect(lastAnswer.body).toMatchObject({ code: 1 });
    const last = lastAnswer.body.data;
    expect([first.total, first.movements.length, last.movements.length]).toEqual([250_000, 500, 500]);
    expect(Math.max(...handed)).toBeLessThanOrEqual(500);
    // The running balances of the last page end at the day's closing balance.
    expect(last.movements.at(-1)).toMatchObject({
      available_after_fen: last.closing_balance.available_fen,
      deposit_after_fen: last.closing_balance.deposit_fen,
    });
    expect(last.closing_balance.available_fen - last.opening_balance.available_fen).toBe(125_000 * 1000);

    const alice = await inviteAndAccept(api.app, api.operator, merchant.id, 'alice-scale@shop.example', new PortalClient(api.app));
    const page = await alice.get(`/portal/statements?date=${today}&page=2500`, { 'accept-language': 'en' });
    expect(page.status).toBe(200);
    expect(page.html).toContain('Movements 249901-250000 of 250000');

    handed.length = 0;
    const csv = await api.app.inject({ method: 'GET', url: `/portal/statements/export.csv?date=${today}`, headers: { cookie: alice.cookieHeader() } });
    expect(csv.statusCode).toBe(200);
    const lines = csv.body.trimEnd().split('\r\n');
    // The header, the opening, every movement, the closing.
    expect(lines).toHaveLength(250_000 + 3);
    expect(lines.at(-2)!.split(',').at(-2)).toBe((last.closing_balance.available_fen / 100).toFixed(2));
    expect(Math.max(...handed)).toBeLessThanOrEqual(1000);
  }, 600_000);
});
