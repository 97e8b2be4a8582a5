import { LedgerRepository, type LedgerSubject, OrderRepository } from '@app/db';
import { RefundLifecycle, PayoutLifecycle } from '@app/orders';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { books, completedOrder, createSellOrder, refundCreate, refundRow } from './helpers/money-out';
import { orderRow, sql } from './helpers/orders';

describe('the ledger: every movement an entry, the balance never below zero (real PostgreSQL)', () => {
  let api: TestApi;

  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(() => api.close());

  it('the database itself refuses a negative balance, whatever statement tries', async () => {
    const { merchant, channels } = await merchantWithChannels(api.operator);
    await completedOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: channels.processor });
    await expect(sql(api.app).query(`UPDATE balances SET available_fen = available_fen - 1000 WHERE merchant_id = $1`, [merchant.id])).rejects.toThrow(
      /balances_available_fen_check/,
    );
    await expect(sql(api.app).query(`UPDATE balances SET deposit_fen = -1 WHERE merchant_id = $1`, [merchant.id])).rejects.toThrow(
      /balances_deposit_fen_check/,
    );
  });

  it('an entry is written once per kind and subject: a second debit or reversal of the same subject moves nothing', async () => {
    const { merchant, channels } = await merchantWithChannels(api.operator);
    const order = await completedOrder(api.app, merchant, { cny_amount: '10.00', paychannel_id: channels.processor });
    const ledger = api.app.get(LedgerRepository);
    const subject = { merchantId: merchant.id, orderId: order.id };
    const completed = (await api.app.get(OrderRepository).findById(order.id))!;
    const moved = await sql(api.app).transaction(async (em) => [
      await ledger.debit(em, 'sell_debit', subject, 100),
      await ledger.debit(em, 'sell_debit', subject, 100),
      await ledger.reverse(em, 'sell_debit', 'sell_reversal', subject),
      await ledger.reverse(em, 'sell_debit', 'sell_reversal', subject),
      await ledger.creditOrder(em, completed),
    ]);
    expect(moved).toEqual([true, false, true, false, false]);
    expect(await books(api.app, merchant.id)).toEqual({ available: 994, deposit: 0, ledgerAvailable: 994, ledgerDeposit: 0 });

    // Entries about a refund are unique per refund: two refunds of one order each have their debit, once.
    const refunds: LedgerSubject[] = [];
    for (const key of ['once-1', 'once-2']) {
      const res = await refundCreate(api.app, merchant, { order_no: order.order_no, refund_amount: '1.00', merchant_refund_no: key });
      const row = await refundRow(api.app, res.body.data.refund_no);
      refunds.push({ merchantId: merchant.id, orderId: order.id, refundId: row.id as string });
      await api.app.get(RefundLifecycle).process(row.id as string);
    }
    const again = await sql(api.app).transaction(async (em) => [
      await ledger.debit(em, 'refund_debit', refunds[0], 100),
      await ledger.reverse(em, 'refund_debit', 'refund_reversal', refunds[0]),
      await ledger.reverse(em, 'refund_debit', 'refund_reversal', refunds[0]),
      await ledger.debit(em, 'refund_debit', refunds[1], 100),
    ]);
    expect(again).toEqual([false, true, false, false]);
    expect(await books(api.app, merchant.id)).toEqual({ available: 994 - 100, deposit: 0, ledgerAvailable: 994 - 100, ledgerDeposit: 0 });
  });

  it('20 concurrent refunds and sell orders against one balance: the refused ones 40902, never below zero, exact totals', async () => {
    const { merchant, channels } = await merchantWithChannels(api.operator, { rate: '0.006' });
    const orders = [];
    for (let i = 0; i < 10; i++) orders.push(await completedOrder(api.app, merchant, { cny_amount: '100.00', paychannel_id: channels.processor }));
    const start = await books(api.app, merchant.id);
    expect(start.available).toBe(10 * 9940);

    // 10 refunds of 60.xx (half of them refused by the channel later: .44) and 10 payouts of 50.xx + fee: more than there is.
    const requests = [
      ...orders.map((o, i) => ({
        kind: 'refund' as const,
        debit: i % 2 === 0 ? 6044 : 6000,
        send: () => refundCreate(api.app, merchant, { order_no: o.order_no, refund_amount: i % 2 === 0 ? '60.44' : '60.00', merchant_refund_no: `race-${i}` }),
      })),
      ...Array.from({ length: 10 }, (_, i) => ({
        kind: 'sell' as const,
        // 50.00 + 0.30 fee, or 50.44 + 0.30 (refused by the channel later).
        debit: i % 2 === 0 ? 5074 : 5030,
        send: () =>
          createSellOrder(api.app, merchant, {
            cny_amount: i % 2 === 0 ? '50.44' : '50.00',
            paychannel_id: channels.remotepay,
            merchant_order_no: `race-sell-${i}`,
          }),
      })),
    ];
    const answers = await Promise.all(requests.map((r) => r.send()));
    const codes = answers.map((a) => a.body.code);
    expect(codes.every((c) => c === 1 || c === 40902)).toBe(true);
    const accepted = requests.filter((_, i) => codes[i] === 1);
    const refused = requests.filter((_, i) => codes[i] === 40902);
    expect(refused.length).toBeGreaterThan(0);
    expect(accepted.length).toBeGreaterThan(0);

    const afterDebits = await books(api.app, merchant.id);
    expect(afterDebits.available).toBe(start.available - accepted.reduce((sum, r) => sum + r.debit, 0));
    expect(afterDebits.available).toBeGreaterThanOrEqual(0);
    expect(afterDebits.available).toBe(afterDebits.ledgerAvailable);
    // The balance only went down meanwhile: each refused request asked for more than was left at the end.
    for (const r of refused) expect(r.debit).toBeGreaterThan(afterDebits.available);
    // Nothing of a refused request was kept.
    const [{ refunds, sells }] = await sql(api.app).query(
      `SELECT (SELECT count(*)::int FROM refunds WHERE merchant_id = $1) AS refunds, (SELECT count(*)::int FROM orders WHERE merchant_id = $1 AND order_type = 2) AS sells`,
      [merchant.id],
    );
    expect([refunds, sells]).toEqual([accepted.filter((r) => r.kind === 'refund').length, accepted.filter((r) => r.kind === 'sell').length]);

    // The channel settles everything: the .44 ones fail and their debits come back.
    for (const [i, a] of answers.entries()) {
      if (a.body.code !== 1) continue;
      if (requests[i].kind === 'refund')
        await api.app.get(RefundLifecycle).process((await refundRow(api.app, (a.body.data as { refund_no: string }).refund_no)).id as string);
      else await api.app.get(PayoutLifecycle).payout((await orderRow(api.app, (a.body.data as { order_no: string }).order_no)).id as string);
    }
    const kept = accepted.filter((r) => r.debit % 100 !== 44 && r.debit % 100 !== 74);
    const end = await books(api.app, merchant.id);
    expect(end.available).toBe(start.available - kept.reduce((sum, r) => sum + r.debit, 0));
    expect(end.available).toBe(end.ledgerAvailable);
    const [{ open }] = await sql(api.app).query(
      `SELECT (SELECT count(*)::int FROM refunds WHERE merchant_id = $1 AND status = 'processing') + (SELECT count(*)::int FROM orders WHERE merchant_id = $1 AND order_type = 2 AND status NOT IN ('completed', 'cancelled')) AS open`,
      [merchant.id],
    );
    expect(open).toBe(0);
  });
});
