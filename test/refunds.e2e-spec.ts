import { RefundRepository } from '@app/db';
import { JobQueue } from '@app/queue';
import { QUEUE } from '@app/common';
import { RefundLifecycle } from '@app/orders';
import type { Credentials } from '@app/operator';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { eventsOf, sql } from './helpers/orders';
import { REFUND_FIELDS, books, completedOrder, createSellOrder, entriesOf, refundCreate, refundQuery, refundQueryList, refundRow } from './helpers/money-out';
import { createOrder, orderRow } from './helpers/orders';

describe('refunds: refundCreate, refundQuery, refundQueryList (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let merchant: Credentials;
  let channel: number;
  let refunds: RefundLifecycle;
  let seq = 0;
  const no = (prefix = 'R'): string => `${prefix}-${++seq}-${Date.now()}`;

  beforeAll(async () => {
    api = await startTestApi();
    const made = await merchantWithChannels(api.operator, { rate: '0.006' });
    merchant = made.merchant;
    channel = made.channels.processor;
    refunds = api.app.get(RefundLifecycle);
    // Money to refund from beyond the orders under test: refunds give back the fee too.
    await completedOrder(api.app, merchant, { cny_amount: '1000.00', paychannel_id: channel });
  });
  afterAll(() => api.close());

  async function process(refundNo: string): Promise<Record<string, unknown>> {
    const row = await refundRow(api.app, refundNo);
    await refunds.process(row.id as string);
    return refundRow(api.app, refundNo);
  }

  it('partial refunds up to the whole amount: debited at creation, settled by the channel, refund.succeeded each', async () => {
    const order = await completedOrder(api.app, merchant, { cny_amount: '100.00', paychannel_id: channel, merchant_order_no: no('M') });
    const before = await books(api.app, merchant.id);

    const first = await refundCreate(api.app, merchant, {
      order_no: order.order_no,
      refund_amount: '30.00',
      merchant_refund_no: no(),
      reason: 'returned one item',
      notify_url: 'https://shop.example/refunds',
    });
    expect([first.status, first.body.code, first.body.msg]).toEqual([200, 1, 'Refund created']);
    expect(Object.keys(first.body.data).sort()).toEqual(REFUND_FIELDS);
    expect(first.body.data).toMatchObject({ order_no: order.order_no, refund_amount: '30.00', status: 'processing', reason: 'returned one item' });
    expect(first.body.data.refund_no).toMatch(/^\d{22}$/);
    // The debit is in the refund's own transaction: the balance is lower before the channel is asked.
    expect((await books(api.app, merchant.id)).available).toBe(before.available - 3000);

    expect(await process(first.body.data.refund_no)).toMatchObject({ status: 'succeeded', channel_refund_no: `SBXR${first.body.data.refund_no}` });
    const queried = await refundQuery(api.app, merchant, { refund_no: first.body.data.refund_no });
    expect(queried.body.data).toMatchObject({ status: 'succeeded', refund_amount: '30.00' });
    expect(queried.body.data.updatetime).toBeGreaterThanOrEqual(queried.body.data.createtime);

    const second = await refundCreate(api.app, merchant, { order_no: order.order_no, refund_amount: '70.00', merchant_refund_no: no() });
    expect(second.body.code).toBe(1);
    await process(second.body.data.refund_no);
    // Nothing is left to refund of this order.
    const third = await refundCreate(api.app, merchant, { order_no: order.order_no, refund_amount: '0.01', merchant_refund_no: no() });
    expect([third.status, third.body.code, third.body.data]).toEqual([
      400,
      40000,
      { errors: [{ field: 'refund_amount', message: 'exceeds what is left to refund of this order (0.00)' }] },
    ]);

    const list = await refundQueryList(api.app, merchant, order.order_no);
    expect(list.body.data.total).toBe(2);
    expect(list.body.data.list.map((r) => [r.refund_no, r.status])).toEqual([
      [second.body.data.refund_no, 'succeeded'],
      [first.body.data.refund_no, 'succeeded'],
    ]);
    expect((await entriesOf(api.app, order.order_no)).map((e) => [e.kind, e.amount_fen])).toEqual([
      ['order_credit', 9940],
      ['order_deposit', 0],
      ['refund_debit', -3000],
      ['refund_debit', -7000],
    ]);
    const after = await books(api.app, merchant.id);
    expect(after.available).toBe(before.available - 10000);
    expect(after.available).toBe(after.ledgerAvailable);

    const events = (await eventsOf(api.app, order.order_no)).filter((e) => e.type.startsWith('refund.'));
    expect(events.map((e) => [e.type, e.payload.refund_no, e.deliveries])).toEqual([
      ['refund.succeeded', first.body.data.refund_no, 1],
      ['refund.succeeded', second.body.data.refund_no, 1],
    ]);
    expect(Object.keys(events[0].payload).sort()).toEqual([...REFUND_FIELDS, 'event', 'event_id', 'merchant_order_no'].sort());
    expect(events[0].payload).toMatchObject({
      status: 'succeeded',
      merchant_order_no: order.merchant_order_no,
      order_no: order.order_no,
      refund_amount: '30.00',
    });
  });

  it("a refund's callback goes to its own notify_url, else the order's, else the merchant's", async () => {
    const order = await completedOrder(api.app, merchant, { cny_amount: '20.00', paychannel_id: channel, notify_url: 'https://shop.example/order' });
    const own = await refundCreate(api.app, merchant, {
      order_no: order.order_no,
      refund_amount: '1.00',
      merchant_refund_no: no(),
      notify_url: 'https://refunds.example:8443/refund',
    });
    await process(own.body.data.refund_no);
    const inherited = await refundCreate(api.app, merchant, { order_no: order.order_no, refund_amount: '1.00', merchant_refund_no: no() });
    await process(inherited.body.data.refund_no);
    // Each delivery keeps the address resolved when it was written (SPEC 7 Address), canonical as stored.
    const deliveries: { type: string; notify_url: string }[] = await sql(api.app).query(
      `SELECT e.type, d.notify_url FROM callback_deliveries d JOIN order_events e ON e.id = d.event_id JOIN orders o ON o.id = d.order_id WHERE o.order_no = $1 ORDER BY e.seq`,
      [order.order_no],
    );
    expect(deliveries.map((d) => d.type)).toEqual(['order.paid', 'order.completed', 'refund.succeeded', 'refund.succeeded']);
    expect(deliveries.map((d) => d.notify_url)).toEqual([
      'https://shop.example/order',
      'https://shop.example/order',
      'https://refunds.example:8443/refund',
      'https://shop.example/order',
    ]);
  });

  it('a second refund while one is processing is 40901; once it settled the next one is taken', async () => {
    const order = await completedOrder(api.app, merchant, { cny_amount: '50.00', paychannel_id: channel });
    const first = await refundCreate(api.app, merchant, { order_no: order.order_no, refund_amount: '10.00', merchant_refund_no: no() });
    const before = await books(api.app, merchant.id);
    const second = await refundCreate(api.app, merchant, { order_no: order.order_no, refund_amount: '10.00', merchant_refund_no: no() });
    expect([second.status, second.body.code, second.body.msg]).toEqual([409, 40901, 'A refund of this order is still processing']);
    expect(await books(api.app, merchant.id)).toEqual(before);
    await process(first.body.data.refund_no);
    expect((await refundCreate(api.app, merchant, { order_no: order.order_no, refund_amount: '10.00', merchant_refund_no: no() })).body.code).toBe(1);
  });

  it('concurrent refunds of one order: exactly one is taken, the others 40901, one debit', async () => {
    const order = await completedOrder(api.app, merchant, { cny_amount: '50.00', paychannel_id: channel });
    const before = await books(api.app, merchant.id);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => refundCreate(api.app, merchant, { order_no: order.order_no, refund_amount: '5.00', merchant_refund_no: no() })),
    );
    expect(answers.map((a) => a.body.code).sort()).toEqual([1, 40901, 40901, 40901, 40901, 40901, 40901, 40901]);
    expect((await books(api.app, merchant.id)).available).toBe(before.available - 500);
    expect((await refundQueryList(api.app, merchant, order.order_no)).body.data.total).toBe(1);
  });

  it('the channel refuses (an amount ending in .44): failed, the debit given back in the same transaction, refund.failed', async () => {
    const order = await completedOrder(api.app, merchant, { cny_amount: '10.00', paychannel_id: channel });
    const before = await books(api.app, merchant.id);
    const res = await refundCreate(api.app, merchant, { order_no: order.order_no, refund_amount: '1.44', merchant_refund_no: no() });
    expect((await books(api.app, merchant.id)).available).toBe(before.available - 144);
    expect(await process(res.body.data.refund_no)).toMatchObject({ status: 'failed', failure: 'sandbox refuses amounts ending in .44', lease_until: null });
    expect(await books(api.app, merchant.id)).toEqual(before);
    expect((await entriesOf(api.app, order.order_no)).filter((e) => e.refund_no).map((e) => [e.kind, e.amount_fen])).toEqual([
      ['refund_debit', -144],
      ['refund_reversal', 144],
    ]);
    const events = (await eventsOf(api.app, order.order_no)).filter((e) => e.type.startsWith('refund.'));
    expect(events.map((e) => [e.type, e.payload.status])).toEqual([['refund.failed', 'failed']]);
    // Processing it again moves nothing twice.
    await refunds.process((await refundRow(api.app, res.body.data.refund_no)).id as string);
    expect(await books(api.app, merchant.id)).toEqual(before);
    // A failed refund takes nothing from the order: the whole amount can still be refunded.
    const whole = await refundCreate(api.app, merchant, { order_no: order.order_no, refund_amount: '10.00', merchant_refund_no: no() });
    expect(whole.body.code).toBe(1);
  });

  it('an available balance lower than the refund is 40902 and leaves nothing behind', async () => {
    const poor = await merchantWithChannels(api.operator, { rate: '0.006' });
    const order = await completedOrder(api.app, poor.merchant, { cny_amount: '10.00', paychannel_id: poor.channels.processor });
    // 9.94 was credited: the fee is not given back, so the whole 10.00 is more than there is.
    const res = await refundCreate(api.app, poor.merchant, { order_no: order.order_no, refund_amount: '10.00', merchant_refund_no: 'too-much' });
    expect([res.status, res.body.code, res.body.msg]).toEqual([409, 40902, 'Available balance too low']);
    expect(await books(api.app, poor.merchant.id)).toEqual({ available: 994, deposit: 0, ledgerAvailable: 994, ledgerDeposit: 0 });
    expect((await refundQueryList(api.app, poor.merchant, order.order_no)).body.data.total).toBe(0);
    // Nothing was recorded under that merchant_refund_no: it can be used for a refund that fits.
    const fits = await refundCreate(api.app, poor.merchant, { order_no: order.order_no, refund_amount: '9.94', merchant_refund_no: 'too-much' });
    expect(fits.body.code).toBe(1);
    expect((await books(api.app, poor.merchant.id)).available).toBe(0);
  });

  it("only a completed buy order: pending, paid or a sell order is 40901; unknown or another merchant's is 40400", async () => {
    const pending = await createOrder(api.app, merchant, { cny_amount: '5.00', paychannel_id: channel });
    const res = await refundCreate(api.app, merchant, { order_no: pending.body.data.order_no, refund_amount: '1.00', merchant_refund_no: no() });
    expect([res.status, res.body.code]).toEqual([409, 40901]);
    expect(res.body.msg).toBe('Only a completed buy order can be refunded; this one is pending');

    const sell = await createSellOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: channel });
    expect((await refundCreate(api.app, merchant, { order_no: sell.body.data.order_no, refund_amount: '1.00', merchant_refund_no: no() })).body.code).toBe(
      40901,
    );

    expect((await refundCreate(api.app, merchant, { order_no: '1'.repeat(22), refund_amount: '1.00', merchant_refund_no: no() })).body.code).toBe(40400);
    const other = await merchantWithChannels(api.operator);
    const foreign = await completedOrder(api.app, other.merchant, { cny_amount: '5.00', paychannel_id: other.channels.processor });
    expect((await refundCreate(api.app, merchant, { order_no: foreign.order_no, refund_amount: '1.00', merchant_refund_no: no() })).body.code).toBe(40400);
    expect((await refundQueryList(api.app, merchant, foreign.order_no)).body.code).toBe(40400);
  });

  it('merchant_refund_no: a repeat answers the first refund, different parameters are 40900', async () => {
    const order = await completedOrder(api.app, merchant, { cny_amount: '30.00', paychannel_id: channel });
    const key = no();
    const params = { order_no: order.order_no, refund_amount: '3.00', merchant_refund_no: key, reason: 'damaged' };
    const first = await refundCreate(api.app, merchant, params);
    await process(first.body.data.refund_no);
    const before = await books(api.app, merchant.id);
    // A number is the same amount as its text.
    const again = await refundCreate(api.app, merchant, { ...params, refund_amount: 3 });
    expect([again.body.code, again.body.msg]).toEqual([1, 'Refund already created with this merchant_refund_no']);
    expect(again.body.data).toEqual({ ...first.body.data, status: 'succeeded', updatetime: again.body.data.updatetime });
    expect(await books(api.app, merchant.id)).toEqual(before);
    // SPEC 2: 40900 names the first refund and what differs from it.
    for (const change of [{ refund_amount: '3.01' }, { reason: 'other' }, { reason: undefined }, { notify_url: 'https://x.example/n' }]) {
      const conflict = await refundCreate(api.app, merchant, { ...params, ...change });
      expect([conflict.status, conflict.body.code, conflict.body.data]).toEqual([
        409,
        40900,
        { refund_no: first.body.data.refund_no, differs: Object.keys(change) },
      ]);
      expect(conflict.body.msg).toMatch(/^merchant_refund_no already used with different parameters/);
    }
    const elsewhere = await completedOrder(api.app, merchant, { cny_amount: '30.00', paychannel_id: channel });
    const moved = await refundCreate(api.app, merchant, { ...params, order_no: elsewhere.order_no, refund_amount: '4.00' });
    expect([moved.body.code, moved.body.data]).toEqual([40900, { refund_no: first.body.data.refund_no, differs: ['order_no', 'refund_amount'] }]);
    // Another merchant's numbers are its own.
    const other = await merchantWithChannels(api.operator);
    const theirs = await completedOrder(api.app, other.merchant, { cny_amount: '30.00', paychannel_id: other.channels.processor });
    expect((await refundCreate(api.app, other.merchant, { ...params, order_no: theirs.order_no })).body.code).toBe(1);
  });

  it('concurrent repeats of one merchant_refund_no create one refund and debit once', async () => {
    const order = await completedOrder(api.app, merchant, { cny_amount: '40.00', paychannel_id: channel });
    const before = await books(api.app, merchant.id);
    const params = { order_no: order.order_no, refund_amount: '4.00', merchant_refund_no: no() };
    const answers = await Promise.all(Array.from({ length: 8 }, () => refundCreate(api.app, merchant, params)));
    expect(answers.map((a) => a.body.code)).toEqual(Array(8).fill(1));
    expect(new Set(answers.map((a) => a.body.data.refund_no)).size).toBe(1);
    expect(answers.filter((a) => a.body.msg === 'Refund created')).toHaveLength(1);
    expect((await books(api.app, merchant.id)).available).toBe(before.available - 400);
    const [{ n }] = await sql(api.app).query(`SELECT count(*)::int AS n FROM refunds WHERE merchant_refund_no = $1`, [params.merchant_refund_no]);
    expect(n).toBe(1);
  });

  it('two workers processing one refund at once settle it once, with one event', async () => {
    const order = await completedOrder(api.app, merchant, { cny_amount: '8.00', paychannel_id: channel });
    const res = await refundCreate(api.app, merchant, { order_no: order.order_no, refund_amount: '2.00', merchant_refund_no: no() });
    const id = (await refundRow(api.app, res.body.data.refund_no)).id as string;
    const outcomes = await Promise.allSettled([refunds.process(id), refunds.process(id), refunds.process(id)]);
    // The lease lets one talk to the channel; the others are told to come back (a retry finds it settled).
    expect(outcomes.filter((o) => o.status === 'fulfilled').length).toBeGreaterThanOrEqual(1);
    await refunds.process(id);
    expect((await refundRow(api.app, res.body.data.refund_no)).status).toBe('succeeded');
    expect((await eventsOf(api.app, order.order_no)).filter((e) => e.type === 'refund.succeeded')).toHaveLength(1);
  });

  it('a worker whose lease ran out releases only its own lease: the worker that claimed since keeps the refund', async () => {
    const order = await completedOrder(api.app, merchant, { cny_amount: '8.00', paychannel_id: channel });
    const res = await refundCreate(api.app, merchant, { order_no: order.order_no, refund_amount: '1.00', merchant_refund_no: no() });
    const id = (await refundRow(api.app, res.body.data.refund_no)).id as string;
    const repository = api.app.get(RefundRepository);
    const slow = (await repository.claim(id, 60_000))!;
    // The slow worker's channel call outlives its lease; a second worker takes the refund.
    await sql(api.app).query(`UPDATE refunds SET lease_until = now() - interval '1 second' WHERE id = $1`, [id]);
    const second = await repository.claim(id, 60_000);
    expect(second).not.toBeNull();
    await repository.release(slow);
    // The second worker still holds it: nobody else may ask the channel now.
    expect(await repository.claim(id, 60_000)).toBeNull();
    await repository.release(second!);
    expect(await repository.claim(id, 60_000)).not.toBeNull();
  });

  it("refundQuery by either number; both must agree; another merchant's refund is 40400", async () => {
    const order = await completedOrder(api.app, merchant, { cny_amount: '6.00', paychannel_id: channel });
    const key = no();
    const res = await refundCreate(api.app, merchant, { order_no: order.order_no, refund_amount: '1.00', merchant_refund_no: key });
    expect((await refundQuery(api.app, merchant, { merchant_refund_no: key })).body.data.refund_no).toBe(res.body.data.refund_no);
    expect((await refundQuery(api.app, merchant, { refund_no: res.body.data.refund_no, merchant_refund_no: key })).body.code).toBe(1);
    expect((await refundQuery(api.app, merchant, { refund_no: res.body.data.refund_no, merchant_refund_no: 'other' })).body.code).toBe(40400);
    const none = await refundQuery(api.app, merchant, {});
    expect([none.body.code, none.body.data]).toEqual([40000, { errors: [{ field: 'refund_no', message: 'refund_no or merchant_refund_no is required' }] }]);
    const other = await merchantWithChannels(api.operator);
    const theirs = await refundQuery(api.app, other.merchant, { refund_no: res.body.data.refund_no });
    expect([theirs.status, theirs.body.code, theirs.body.msg]).toEqual([404, 40400, 'Refund not found']);
  });

  it.each([
    ['refund_amount', { refund_amount: '0.00' }],
    ['refund_amount', { refund_amount: '1.001' }],
    ['refund_amount', { refund_amount: -1 }],
    ['refund_amount', { refund_amount: undefined }],
    ['merchant_refund_no', { merchant_refund_no: 'has space' }],
    ['merchant_refund_no', { merchant_refund_no: 'x'.repeat(65) }],
    ['merchant_refund_no', { merchant_refund_no: undefined }],
    ['reason', { reason: 'x'.repeat(129) }],
    ['notify_url', { notify_url: 'ftp://x.example/n' }],
    ['order_no', { order_no: undefined }],
  ])('refundCreate names %s when it is wrong: %p', async (field, change) => {
    const params: Record<string, unknown> = { order_no: '1'.repeat(22), refund_amount: '1.00', merchant_refund_no: no(), ...change };
    for (const [k, v] of Object.entries(params)) if (v === undefined) delete params[k];
    const res = await refundCreate(api.app, merchant, params);
    expect([res.status, res.body.code, (res.body.data as unknown as { errors: { field: string }[] }).errors[0].field]).toEqual([400, 40000, field]);
  });

  it('the maintenance sweep starts a new job for a refund left processing (its job lost)', async () => {
    const order = await completedOrder(api.app, merchant, { cny_amount: '7.00', paychannel_id: channel });
    const res = await refundCreate(api.app, merchant, { order_no: order.order_no, refund_amount: '1.00', merchant_refund_no: no() });
    const id = (await refundRow(api.app, res.body.data.refund_no)).id as string;
    await sql(api.app).query(`UPDATE refunds SET created_at = now() - interval '1 hour' WHERE id = $1`, [id]);
    expect(await refunds.sweep(300)).toBeGreaterThanOrEqual(1);
    const jobs = await api.app.get(JobQueue).queue(QUEUE.orders).getJobs(['waiting', 'delayed', 'prioritized']);
    expect(jobs.some((j) => j.name === 'refund.process' && j.data.refundId === id && String(j.id).startsWith(`refund-${id}-sweep-`))).toBe(true);
    // A refund being worked on (its lease held) is left alone.
    await sql(api.app).query(`UPDATE refunds SET lease_until = now() + interval '1 minute' WHERE id = $1`, [id]);
    const stuck = await api.app.get(RefundRepository).findStuckIds(300, 500);
    expect(stuck).not.toContain(id);
    expect((await orderRow(api.app, order.order_no)).status).toBe('completed');
  });
});
