import { SecretBox } from '@app/common';
import { PayoutRepository } from '@app/db';
import { PayoutLifecycle, payeeAccountContext } from '@app/orders';
import type { Credentials } from '@app/operator';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { books, completedOrder, createSellOrder, entriesOf, orderClose } from './helpers/money-out';
import { eventsOf, orderDetail, orderRow, sql } from './helpers/orders';

const ACCOUNT = '6222021234561234';
const MASKED = '6222********1234';
const CREATED_FIELDS = [
  'cny_amount',
  'createtime',
  'deposit_amount',
  'expires_at',
  'merchant_actual_amount',
  'merchant_amount',
  'merchant_order_no',
  'order_no',
  'order_type',
  'pay_url',
  'payment_method',
  'service_amount',
  'status',
];
const ORDER_FIELDS = [
  'cny_amount',
  'createtime',
  'merchant_actual_amount',
  'merchant_order_no',
  'order_no',
  'order_type',
  'service_amount',
  'service_rate',
  'status',
  'updatetime',
].sort();

describe('sell orders: createSellOrder and the payout (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let merchant: Credentials;
  let channel: number;
  let sellOrders: PayoutLifecycle;

  beforeAll(async () => {
    api = await startTestApi();
    const made = await merchantWithChannels(api.operator, { rate: '0.006' });
    merchant = made.merchant;
    channel = made.channels.remotepay;
    sellOrders = api.app.get(PayoutLifecycle);
    await completedOrder(api.app, merchant, { cny_amount: '1000.00', paychannel_id: channel });
  });
  afterAll(() => api.close());

  const payOut = async (orderNo: string): Promise<Record<string, unknown>> => {
    await sellOrders.payout((await orderRow(api.app, orderNo)).id as string);
    return orderRow(api.app, orderNo);
  };

  it('debits cny + service at creation and answers like createOrder (order_type 2, pay_url null) with the payee, its account masked', async () => {
    const before = await books(api.app, merchant.id);
    const res = await createSellOrder(api.app, merchant, { cny_amount: '100.00', paychannel_id: channel, merchant_order_no: 'payout-1' });
    expect([res.status, res.body.code, res.body.msg]).toEqual([200, 1, 'Sell order created']);
    expect(Object.keys(res.body.data).sort()).toEqual([...CREATED_FIELDS, 'payee_account', 'payee_bank', 'payee_name'].sort());
    expect(res.body.data).toMatchObject({
      order_type: 2,
      status: 'pending',
      pay_url: null,
      // A payout does not expire.
      expires_at: null,
      payment_method: 'bank',
      cny_amount: '100.00',
      service_amount: 60,
      deposit_amount: 0,
      merchant_actual_amount: 10060,
      merchant_amount: '100.60',
      merchant_order_no: 'payout-1',
      payee_name: '张三',
      payee_bank: '中国工商银行',
      payee_account: MASKED,
    });
    expect(res.raw).not.toContain(ACCOUNT);
    expect((await books(api.app, merchant.id)).available).toBe(before.available - 10060);
    expect((await entriesOf(api.app, res.body.data.order_no)).map((e) => [e.kind, e.amount_fen])).toEqual([['sell_debit', -10060]]);
    // Stored sealed under a context naming the order: readable by the service, not by a copy onto another row.
    const [payout] = await sql(api.app).query(`SELECT * FROM payouts WHERE order_id = $1`, [(await orderRow(api.app, res.body.data.order_no)).id]);
    expect(JSON.stringify(payout)).not.toContain(ACCOUNT);
    const box = api.app.get(SecretBox);
    expect(box.open(payout.payee_account_enc, payeeAccountContext(res.body.data.order_no))).toBe(ACCOUNT);
    expect(() => box.open(payout.payee_account_enc, payeeAccountContext('1'.repeat(22)))).toThrow();
  });

  it('the sandbox pays out: pending -> paid -> completed, order.paid then order.completed, no money moved twice', async () => {
    const res = await createSellOrder(api.app, merchant, { cny_amount: '20.00', paychannel_id: channel });
    const afterDebit = await books(api.app, merchant.id);
    const row = await payOut(res.body.data.order_no);
    expect(row).toMatchObject({ status: 'completed', channel_trade_no: `SBXP${res.body.data.order_no}`, late_payment: false });
    expect(row.paid_at).not.toBeNull();
    await payOut(res.body.data.order_no);
    expect(await books(api.app, merchant.id)).toEqual(afterDebit);
    const events = await eventsOf(api.app, res.body.data.order_no);
    expect(events.map((e) => [e.type, e.payload.order_type, e.payload.status, e.deliveries])).toEqual([
      ['order.paid', 2, 'paid', 1],
      ['order.completed', 2, 'completed', 1],
    ]);
    expect(JSON.stringify(events)).not.toContain(ACCOUNT);
    const [payout] = await sql(api.app).query(`SELECT settled_at, lease_until FROM payouts WHERE order_id = $1`, [row.id]);
    expect(payout.settled_at).not.toBeNull();
    expect(payout.lease_until).toBeNull();
  });

  it('a refused payout (an amount ending in .44) cancels the order and reverses the debit in the same transaction', async () => {
    const before = await books(api.app, merchant.id);
    const res = await createSellOrder(api.app, merchant, { cny_amount: '3.44', paychannel_id: channel });
    expect((await books(api.app, merchant.id)).available).toBe(before.available - 344 - 2);
    expect(await payOut(res.body.data.order_no)).toMatchObject({ status: 'cancelled', paid_at: null });
    expect(await books(api.app, merchant.id)).toEqual(before);
    expect((await entriesOf(api.app, res.body.data.order_no)).map((e) => [e.kind, e.amount_fen])).toEqual([
      ['sell_debit', -346],
      ['sell_reversal', 346],
    ]);
    const events = await eventsOf(api.app, res.body.data.order_no);
    expect(events.map((e) => [e.type, e.payload.reason])).toEqual([['order.cancelled', 'refused']]);
    const [payout] = await sql(api.app).query(`SELECT failure, settled_at FROM payouts WHERE order_id = $1`, [
      (await orderRow(api.app, res.body.data.order_no)).id,
    ]);
    expect(payout).toMatchObject({ failure: 'sandbox refuses amounts ending in .44' });
    expect(payout.settled_at).not.toBeNull();
    await payOut(res.body.data.order_no);
    expect(await books(api.app, merchant.id)).toEqual(before);
  });

  it('a balance lower than cny + service is 40902 and leaves no order behind', async () => {
    const poor = await merchantWithChannels(api.operator, { rate: '0.006' });
    await completedOrder(api.app, poor.merchant, { cny_amount: '10.00', paychannel_id: poor.channels.processor });
    // 9.94 credited; 9.89 + 0.06 fee = 9.95 is one fen too much.
    const res = await createSellOrder(api.app, poor.merchant, { cny_amount: '9.89', paychannel_id: poor.channels.processor, merchant_order_no: 'too-much' });
    expect([res.status, res.body.code, res.body.msg]).toEqual([409, 40902, 'Available balance too low']);
    const [{ n }] = await sql(api.app).query(`SELECT count(*)::int AS n FROM orders WHERE merchant_id = $1 AND order_type = 2`, [poor.merchant.id]);
    expect(n).toBe(0);
    expect(await books(api.app, poor.merchant.id)).toEqual({ available: 994, deposit: 0, ledgerAvailable: 994, ledgerDeposit: 0 });
    const fits = await createSellOrder(api.app, poor.merchant, { cny_amount: '9.88', paychannel_id: poor.channels.processor, merchant_order_no: 'too-much' });
    expect([fits.body.code, fits.body.data.merchant_actual_amount]).toEqual([1, 994]);
    expect((await books(api.app, poor.merchant.id)).available).toBe(0);
    // A merchant that never had money has no balance row at all: still 40902, never a negative row.
    const empty = await merchantWithChannels(api.operator);
    expect((await createSellOrder(api.app, empty.merchant, { cny_amount: '0.01', paychannel_id: empty.channels.processor })).body.code).toBe(40902);
  });

  it('shows in orderQueryList and orderQueryDetail with order_type 2 and the interface fields only', async () => {
    const res = await createSellOrder(api.app, merchant, { cny_amount: '5.00', paychannel_id: channel });
    await payOut(res.body.data.order_no);
    const detail = await orderDetail(api.app, merchant, res.body.data.order_no);
    expect(Object.keys(detail.body.data).sort()).toEqual(ORDER_FIELDS);
    expect(detail.body.data).toMatchObject({ order_type: 2, status: 'completed', cny_amount: '5.00', service_amount: 3, merchant_actual_amount: 503 });
    const list = await post<{ list: Record<string, unknown>[]; total: number }>(
      api.app,
      '/api/merchant/orderQueryList',
      signed(merchant, { order_type: 2, limit: 100 }),
    );
    expect(list.body.data.list.map((o) => o.order_no)).toContain(res.body.data.order_no);
    expect(list.body.data.list.every((o) => o.order_type === 2)).toBe(true);
    expect(list.raw).not.toContain(ACCOUNT);
  });

  it('a sell order cannot be closed, paid on a checkout page or by a payment notification', async () => {
    const res = await createSellOrder(api.app, merchant, { cny_amount: '2.00', paychannel_id: channel });
    const closed = await orderClose(api.app, merchant, res.body.data.order_no);
    expect([closed.status, closed.body.code]).toEqual([409, 40901]);
    expect((await api.app.inject({ method: 'GET', url: `/sandbox/checkout/${res.body.data.order_no}?token=${'0'.repeat(64)}` })).statusCode).toBe(404);
    expect((await orderRow(api.app, res.body.data.order_no)).status).toBe('pending');
  });

  it("merchant_order_no: a repeat answers the first order, a different payee or amount is 40900, a top-up's number too", async () => {
    const params = { cny_amount: '4.00', paychannel_id: channel, merchant_order_no: 'payout-repeat' };
    const first = await createSellOrder(api.app, merchant, params);
    const before = await books(api.app, merchant.id);
    const again = await createSellOrder(api.app, merchant, params);
    expect([again.body.code, again.body.msg, again.body.data]).toEqual([1, 'Order already created with this merchant_order_no', first.body.data]);
    // SPEC 2: 40900 names the first order and what differs, never the account itself.
    for (const change of [{ payee_account: '6222021234569999' }, { payee_name: '李四' }, { payee_bank: '中国银行' }, { cny_amount: '4.01' }]) {
      const conflict = await createSellOrder(api.app, merchant, { ...params, ...change });
      expect([conflict.status, conflict.body.code, conflict.body.data]).toEqual([
        409,
        40900,
        { order_no: first.body.data.order_no, differs: Object.keys(change) },
      ]);
      expect(conflict.raw).not.toContain(ACCOUNT);
    }
    expect(await books(api.app, merchant.id)).toEqual(before);
    const topUp = await completedOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: channel, merchant_order_no: 'topup-number' });
    const crossed = await createSellOrder(api.app, merchant, { ...params, merchant_order_no: 'topup-number' });
    expect([crossed.body.code, crossed.body.data]).toEqual([
      40900,
      { order_no: topUp.order_no, differs: ['order_type', 'cny_amount', 'payee_name', 'payee_bank', 'payee_account'] },
    ]);
  });

  it('concurrent repeats of one merchant_order_no create one sell order and debit once', async () => {
    const before = await books(api.app, merchant.id);
    const params = { cny_amount: '1.50', paychannel_id: channel, merchant_order_no: 'payout-race' };
    const answers = await Promise.all(Array.from({ length: 8 }, () => createSellOrder(api.app, merchant, params)));
    expect(answers.map((a) => a.body.code)).toEqual(Array(8).fill(1));
    expect(new Set(answers.map((a) => a.body.data.order_no)).size).toBe(1);
    expect((await books(api.app, merchant.id)).available).toBe(before.available - 151);
  });

  it('an epay channel has no payouts: 40302; an unlinked channel 40301', async () => {
    const live = await api.operator.merchants.create({ name: 'live shop' });
    const { id: epay } = await api.operator.channels.create({
      category: 'remotepay',
      name: 'epay',
      payMethod: 'alipay,bank',
      adapter: 'epay',
      config: JSON.stringify({ merchant_no: '1001', secret_key: 'k', gateway_url: 'https://pay.example/' }),
    });
    await api.operator.channels.link(live.id, epay);
    const res = await createSellOrder(api.app, live, { cny_amount: '1.00', paychannel_id: epay });
    expect([res.status, res.body.code, res.body.msg]).toEqual([403, 40302, 'This payment channel does not pay out (no sell orders)']);
    const unlinked = await createSellOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: epay });
    const usable = (await post<{ list: { id: number }[] }>(api.app, '/api/merchant/getPayChannels', signed(merchant))).body.data.list.map((c) => c.id);
    expect(usable).toContain(channel);
    const named = unlinked.body.data as unknown as { paychannel_id: number; linked: { id: number }[] };
    expect([unlinked.body.code, named.paychannel_id, named.linked.map((c) => c.id)]).toEqual([40301, epay, usable]);
  });

  it.each([
    ['payee_account', { payee_account: '62220212345' }],
    ['payee_account', { payee_account: '62220212345612345678' }],
    ['payee_account', { payee_account: 6222021234561234 }],
    ['payee_account', { payee_account: '6222-0212-3456-1234' }],
    ['payee_name', { payee_name: ' ' }],
    ['payee_name', { payee_name: 'x'.repeat(65) }],
    ['payee_bank', { payee_bank: 'x'.repeat(65) }],
    ['cny_amount', { cny_amount: '0' }],
    ['cny_amount', { cny_amount: '2000000.00' }],
    ['paychannel_id', { paychannel_id: 'x' }],
    ['notify_url', { notify_url: 'javascript:alert(1)' }],
  ])('names %s when it is wrong (%p), never echoing the account', async (field, change) => {
    const res = await createSellOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: channel, ...change });
    expect([res.status, res.body.code, (res.body.data as unknown as { errors: { field: string }[] }).errors[0].field]).toEqual([400, 40000, field]);
    expect(res.raw).not.toMatch(/\d{12,}/);
  });

  it('a worker whose lease ran out releases only its own lease: the worker that claimed since keeps the payout', async () => {
    const res = await createSellOrder(api.app, merchant, { cny_amount: '1.30', paychannel_id: channel });
    const id = (await orderRow(api.app, res.body.data.order_no)).id as string;
    const repository = api.app.get(PayoutRepository);
    const slow = (await repository.claim(id, 60_000))!;
    // The slow worker's channel call outlives its lease; a second worker takes the payout.
    await sql(api.app).query(`UPDATE payouts SET lease_until = now() - interval '1 second' WHERE order_id = $1`, [id]);
    const second = await repository.claim(id, 60_000);
    expect(second).not.toBeNull();
    await repository.release(slow);
    expect(await repository.claim(id, 60_000)).toBeNull();
    await repository.release(second!);
    expect(await repository.claim(id, 60_000)).not.toBeNull();
  });

  it('the maintenance sweep starts a new job for a payout left open (its job lost)', async () => {
    const res = await createSellOrder(api.app, merchant, { cny_amount: '1.20', paychannel_id: channel });
    const id = (await orderRow(api.app, res.body.data.order_no)).id as string;
    await sql(api.app).query(`UPDATE payouts SET attempted_at = now() - interval '1 hour' WHERE order_id = $1`, [id]);
    expect(await sellOrders.sweep(300)).toBeGreaterThanOrEqual(1);
    await payOut(res.body.data.order_no);
    expect(await sellOrders.sweep(300)).toBe(0);
  });
});
