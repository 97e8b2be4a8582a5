import { PayoutLifecycle } from '@app/orders';
import type { Credentials } from '@app/operator';
import { shanghaiDate, shanghaiDayBounds } from '@app/recon';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { books, completedOrder, createSellOrder } from './helpers/money-out';
import { orderRow, sql } from './helpers/orders';
import { PortalClient, inviteAndAccept } from './helpers/portal';
import { processedRefund } from './helpers/recon';

interface StatementAnswer {
  date: string;
  opening_balance: { available_fen: number; deposit_fen: number };
  closing_balance: { available_fen: number; deposit_fen: number };
  movements: {
    kind: string;
    account: string;
    amount_fen: number;
    order_no: string;
    refund_no: string | null;
    available_after_fen: number;
    deposit_after_fen: number;
    time: number;
  }[];
  total: number;
  page: number;
  limit: number;
}

describe('statements: statementQuery and /portal/statements (real PostgreSQL)', () => {
  let api: TestApi;
  let a: Credentials;
  let b: Credentials;
  let channel: number;
  const days: string[] = [];

  const statement = (merchant: Credentials, date: string, paging: Record<string, unknown> = {}) =>
    post<StatementAnswer>(api.app, '/api/merchant/statementQuery', signed(merchant, { date, ...paging }));

  /** Moves an order's entries (and its refunds') to 10:00 + minutes of a day, as if they had happened then. */
  async function happenedOn(orderNo: string, day: string, minutes: number): Promise<void> {
    const at = new Date(shanghaiDayBounds(day)!.from.getTime() + (10 * 60 + minutes) * 60_000);
    await sql(api.app).query(`UPDATE "ledger_entries" SET "created_at" = $2 WHERE "order_id" = (SELECT "id" FROM "orders" WHERE "order_no" = $1)`, [
      orderNo,
      at,
    ]);
  }

  beforeAll(async () => {
    api = await startTestApi();
    const made = await merchantWithChannels(api.operator, { depositRate: '0.1' });
    a = made.merchant;
    channel = made.channels.processor;
    b = (await merchantWithChannels(api.operator)).merchant;
    const today = shanghaiDate(new Date());
    for (const back of [2, 1, 0]) days.push(shanghaiDate(new Date(shanghaiDayBounds(today)!.from.getTime() - back * 86_400_000 + 3_600_000)));

    // Day 1: two top-ups credited (available and deposit). Day 2: a refund of one, a payout, a refused payout.
    // Day 3: a top-up and a refund the sandbox refuses (debited, then given back).
    const first = await completedOrder(api.app, a, { cny_amount: '500.00', paychannel_id: channel });
    const second = await completedOrder(api.app, a, { cny_amount: '100.00', paychannel_id: channel });
    await happenedOn(first.order_no, days[0], 0);
    await happenedOn(second.order_no, days[0], 5);
    await processedRefund(api.app, a, second.order_no, '30.00');
    const payout = await createSellOrder(api.app, a, {
      cny_amount: '50.00',
      paychannel_id: channel,
      payee_name: '张三',
      payee_account: '6222021234561234',
      payee_bank: '工商银行',
    });
    const refused = await createSellOrder(api.app, a, {
      cny_amount: '10.44',
      paychannel_id: channel,
      payee_name: '李四',
      payee_account: '6222021234565678',
      payee_bank: '建设银行',
    });
    for (const o of [payout.body.data.order_no, refused.body.data.order_no]) await api.app.get(PayoutLifecycle).payout(String((await orderRow(api.app, o)).id));
    await happenedOn(second.order_no, days[1], 0);
    await sql(api.app).query(
      `UPDATE "ledger_entries" SET "created_at" = $2 WHERE "order_id" = (SELECT "id" FROM "orders" WHERE "order_no" = $1) AND "refund_id" IS NULL`,
      [second.order_no, new Date(shanghaiDayBounds(days[0])!.from.getTime() + 10 * 3_600_000 + 5 * 60_000)],
    );
    await happenedOn(payout.body.data.order_no, days[1], 10);
    await happenedOn(refused.body.data.order_no, days[1], 20);
    const third = await completedOrder(api.app, a, { cny_amount: '200.00', paychannel_id: channel });
    const failed = await processedRefund(api.app, a, third.order_no, '20.44');
    expect(failed.status).toBe('failed');
    await happenedOn(third.order_no, days[2], 0);
  });
  afterAll(() => api.close());

  it('over three days each closing balance is the next opening, the movements sum to the difference, the last closing is the balance', async () => {
    const answers: StatementAnswer[] = [];
    for (const day of days) {
      const res = await statement(a, day);
      expect([res.status, res.body.code]).toEqual([200, 1]);
      answers.push(res.body.data);
    }
    expect(answers.map((s) => s.movements.map((m) => m.kind))).toEqual([
      ['order_credit', 'order_deposit', 'order_credit', 'order_deposit'],
      ['refund_debit', 'sell_debit', 'sell_debit', 'sell_reversal'],
      ['order_credit', 'order_deposit', 'refund_debit', 'refund_reversal'],
    ]);
    expect(answers[0].opening_balance).toEqual({ available_fen: 0, deposit_fen: 0 });
    for (let i = 0; i < answers.length; i++) {
      const s = answers[i];
      if (i > 0) expect(s.opening_balance).toEqual(answers[i - 1].closing_balance);
      const sum = (account: string) => s.movements.filter((m) => m.account === account).reduce((t, m) => t + m.amount_fen, 0);
      expect(s.closing_balance.available_fen - s.opening_balance.available_fen).toBe(sum('available'));
      expect(s.closing_balance.deposit_fen - s.opening_balance.deposit_fen).toBe(sum('deposit'));
      expect(s.total).toBe(s.movements.length);
      if (s.movements.length) expect(s.movements.at(-1)!.available_after_fen).toBe(s.closing_balance.available_fen);
      for (const m of s.movements) expect(shanghaiDate(new Date(m.time * 1000))).toBe(s.date);
    }
    const now = await books(api.app, a.id);
    expect(answers[2].closing_balance).toEqual({ available_fen: now.available, deposit_fen: now.deposit });
  });

  it('a merchant sees only its own statement; a bad date is 40000 naming the field', async () => {
    for (const day of days) {
      const res = await statement(b, day);
      expect(res.body.data).toMatchObject({
        opening_balance: { available_fen: 0, deposit_fen: 0 },
        closing_balance: { available_fen: 0, deposit_fen: 0 },
        movements: [],
        total: 0,
      });
    }
    for (const date of ['2025-02-30', '20251121', '', 'yesterday']) {
      const res = await statement(a, date);
      expect([res.status, res.body.code]).toEqual([400, 40000]);
      expect(res.body.data).toMatchObject({ errors: [{ field: 'date' }] });
    }
    const missing = await post(api.app, '/api/merchant/statementQuery', signed(a, {}));
    expect(missing.body.code).toBe(40000);
    // A day after today (Asia/Shanghai) has no statement yet.
    const tomorrow = shanghaiDate(new Date(Date.now() + 86_400_000));
    const future = await statement(a, tomorrow);
    expect([future.status, future.body.code, future.body.data]).toEqual([
      400,
      40000,
      { errors: [{ field: 'date', message: expect.stringContaining('today') }] },
    ]);
    for (const paging of [{ limit: 0 }, { limit: 501 }, { page: 0 }, { limit: 'ten' }]) {
      const res = await statement(a, days[0], paging);
      expect([Object.keys(paging)[0], res.body.code]).toEqual([Object.keys(paging)[0], 40000]);
    }
  });

  it('pages the movements (limit 1 to 500, default 100) with total, the running balances going on from page to page', async () => {
    const whole = (await statement(a, days[1])).body.data;
    expect([whole.total, whole.movements.length, whole.page, whole.limit]).toEqual([4, 4, 1, 100]);
    const pages = [1, 2, 3].map((page) => statement(a, days[1], { page, limit: 2 }));
    const [first, second, third] = (await Promise.all(pages)).map((res) => res.body.data);
    expect([first.total, second.total, third.total]).toEqual([4, 4, 4]);
    expect([...first.movements, ...second.movements]).toEqual(whole.movements);
    expect(third.movements).toEqual([]);
    for (const part of [first, second, third]) expect([part.opening_balance, part.closing_balance]).toEqual([whole.opening_balance, whole.closing_balance]);
  });

  it("keeps each closed day's closing balance once (ledger_day_balances), never updated, and answers the same from it", async () => {
    const kept = async () =>
      (await sql(api.app).query(
        `SELECT day::text, available_fen::int AS available, deposit_fen::int AS deposit, movements, created_at FROM ledger_day_balances WHERE merchant_id = $1 ORDER BY day`,
        [a.id],
      )) as { day: string; available: number; deposit: number; movements: number; created_at: Date }[];
    // Closed: ended over an hour ago (the day before yesterday always is; yesterday once today is an hour old).
    const closed = days.filter((day) => shanghaiDayBounds(day)!.to.getTime() + 3_600_000 < Date.now());
    expect(closed.length).toBeGreaterThanOrEqual(1);
    const answers = [];
    for (const day of closed) answers.push((await statement(a, day)).body.data);
    const rows = await kept();
    for (const [i, day] of closed.entries()) {
      expect(rows.find((r) => r.day === day)).toMatchObject({
        available: answers[i].closing_balance.available_fen,
        deposit: answers[i].closing_balance.deposit_fen,
        movements: answers[i].total,
      });
    }
    // Asked again: the same answers, from the same rows (none written again).
    for (const [i, day] of closed.entries()) expect((await statement(a, day)).body.data).toEqual(answers[i]);
    expect(await kept()).toEqual(rows);
  });

  it('the portal page shows the day; the CSV is UTF-8 with a BOM, in the page language; another merchant sees none of it', async () => {
    const alice = await inviteAndAccept(api.app, api.operator, a.id, 'alice-statements@shop.example');
    const page = await alice.get(`/portal/statements?date=${days[1]}`, { 'accept-language': 'en' });
    expect(page.status).toBe(200);
    expect(page.html).toContain('Opening balance');
    expect(page.html).toContain('Payout (amount + fee)');
    const api1 = (await statement(a, days[1])).body.data;
    for (const m of api1.movements) expect(page.html).toContain(m.order_no);

    const csv = await api.app.inject({
      method: 'GET',
      url: `/portal/statements/export.csv?date=${days[1]}`,
      headers: { cookie: alice.cookieHeader(), 'accept-language': 'zh-CN' },
    });
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.rawPayload.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
    const rows = csv.rawPayload.subarray(3).toString('utf8').trim().split('\r\n');
    expect(rows[0]).toBe('时间（北京时间）,类型,订单号,商户订单号,退款单号,账户,金额（元）,变动后可用余额（元）,变动后保证金（元）');
    expect(rows[1]).toContain('期初余额');
    // Order and refund numbers are text to a spreadsheet: ="...", quoted as CSV.
    const refund = api1.movements.find((m) => m.refund_no)!;
    const refundRow = rows.find((r) => r.includes(refund.refund_no!))!;
    expect(refundRow.split(',').slice(2, 5)).toEqual([`"=""${refund.order_no}"""`, '', `"=""${refund.refund_no}"""`]);
    const english = await api.app.inject({
      method: 'GET',
      url: `/portal/statements/export.csv?date=${days[1]}`,
      headers: { cookie: alice.cookieHeader(), 'accept-language': 'en' },
    });
    expect(english.body.split('\r\n')[0]).toBe(
      '\uFEFFTime (Asia/Shanghai),Entry,Order no.,Merchant order no.,Refund no.,Balance,Amount (yuan),Available after (yuan),Deposit after (yuan)',
    );
    expect(rows.at(-1)).toContain('期末余额');
    expect(rows).toHaveLength(api1.movements.length + 3);
    expect(rows.at(-1)!.split(',').at(-2)).toBe((api1.closing_balance.available_fen / 100).toFixed(2));

    const bob = await inviteAndAccept(api.app, api.operator, b.id, 'bob-statements@shop.example');
    const other = await bob.get(`/portal/statements?date=${days[1]}`);
    expect(other.status).toBe(200);
    for (const m of api1.movements) expect(other.html).not.toContain(m.order_no);
    const otherCsv = await api.app.inject({ method: 'GET', url: `/portal/statements/export.csv?date=${days[1]}`, headers: { cookie: bob.cookieHeader() } });
    expect(otherCsv.body.trim().split('\r\n')).toHaveLength(3);

    expect((await alice.get('/portal/statements?date=2025-13-01')).status).toBe(400);
    const tomorrowDay = shanghaiDate(new Date(Date.now() + 86_400_000));
    const tomorrow = await alice.get(`/portal/statements?date=${tomorrowDay}`, { 'accept-language': 'en' });
    expect([tomorrow.status, tomorrow.html.includes('This day has not come yet')]).toEqual([400, true]);
    expect((await alice.get(`/portal/statements/export.csv?date=${tomorrowDay}`)).status).toBe(400);
    expect((await new PortalClient(api.app).get('/portal/statements')).status).toBe(303);
  });
});
