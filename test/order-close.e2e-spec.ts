import { ChannelRepository } from '@app/db';
import { ChannelAdapters, signSandboxNotification } from '@app/channels';
import { OrderLifecycle } from '@app/orders';
import type { Credentials } from '@app/operator';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { orderClose } from './helpers/money-out';
import { createOrder, eventsOf, orderRow, sql } from './helpers/orders';

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

describe('orderClose (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let merchant: Credentials;
  let channel: number;

  beforeAll(async () => {
    api = await startTestApi();
    const made = await merchantWithChannels(api.operator);
    merchant = made.merchant;
    channel = made.channels.warehouse;
  });
  afterAll(() => api.close());

  const newOrder = async (amount = '10.00'): Promise<string> =>
    (await createOrder(api.app, merchant, { cny_amount: amount, paychannel_id: channel })).body.data.order_no;
  const notify = async (orderNo: string, fen: number, outcome: 'paid' | 'failed') => {
    const secret = api.app.get(ChannelAdapters).channelConfig((await api.app.get(ChannelRepository).findById(channel))!).secret_key!;
    return api.app.inject({
      method: 'POST',
      url: `/api/channel/notify/${channel}`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(signSandboxNotification(secret, orderNo, fen, outcome)),
    });
  };

  it('pending -> cancelled with order.cancelled (reason closed); closing again answers the order with code 1', async () => {
    const orderNo = await newOrder();
    const res = await orderClose(api.app, merchant, orderNo);
    expect([res.status, res.body.code, res.body.msg]).toEqual([200, 1, 'Order closed']);
    expect(Object.keys(res.body.data).sort()).toEqual(ORDER_FIELDS);
    expect(res.body.data).toMatchObject({ order_no: orderNo, status: 'cancelled', order_type: 1 });
    const events = await eventsOf(api.app, orderNo);
    expect(events.map((e) => [e.type, e.payload.reason, e.payload.status, e.deliveries])).toEqual([['order.cancelled', 'closed', 'cancelled', 1]]);

    const again = await orderClose(api.app, merchant, orderNo);
    expect([again.status, again.body.code, again.body.msg, again.body.data]).toEqual([200, 1, 'Order already cancelled', res.body.data]);
    expect(await eventsOf(api.app, orderNo)).toHaveLength(1);
  });

  it('an order cancelled otherwise (expiry, the channel) answers code 1 too; every order.cancelled names its reason', async () => {
    const expired = await newOrder();
    await sql(api.app).query(`UPDATE orders SET expires_at = now() - interval '1 second' WHERE order_no = $1`, [expired]);
    await api.app.get(OrderLifecycle).expireOverdue();
    const closedByChannel = await newOrder('11.00');
    await api.app.get(OrderLifecycle).markClosedByChannel((await orderRow(api.app, closedByChannel)).id as string);
    for (const [orderNo, msg, reason] of [
      [expired, 'Order already cancelled', 'expired'],
      [closedByChannel, 'Order already cancelled', 'closed'],
    ]) {
      const res = await orderClose(api.app, merchant, orderNo);
      expect([res.body.code, res.body.msg, res.body.data.status]).toEqual([1, msg, 'cancelled']);
      expect((await eventsOf(api.app, orderNo)).map((e) => e.payload.reason)).toEqual([reason]);
    }
  });

  it('after a failed payment attempt the order is still pending: orderClose closes it (SPEC 5, issue 38)', async () => {
    const orderNo = await newOrder('11.00');
    expect((await notify(orderNo, 1100, 'failed')).body).toBe('success');
    const res = await orderClose(api.app, merchant, orderNo);
    expect([res.body.code, res.body.msg, res.body.data.status]).toEqual([1, 'Order closed', 'cancelled']);
    expect((await eventsOf(api.app, orderNo)).map((e) => [e.type, e.payload.reason ?? null])).toEqual([
      ['payment.attempt_failed', null],
      ['order.cancelled', 'closed'],
    ]);
  });

  it('a paid or completed order is 40901 and stays as it is', async () => {
    const orderNo = await newOrder('12.00');
    // Left paid as a channel whose word is not final (epay) leaves it, waiting for the confirm job.
    await api.app.get(OrderLifecycle).markPaid((await orderRow(api.app, orderNo)).id as string, { amountFen: 1200, channelTradeNo: null }, { final: false });
    const paid = await orderClose(api.app, merchant, orderNo);
    expect([paid.status, paid.body.code, paid.body.msg]).toEqual([409, 40901, 'An order that is paid cannot be closed']);
    await api.app.get(OrderLifecycle).confirm((await orderRow(api.app, orderNo)).id as string);
    expect((await orderClose(api.app, merchant, orderNo)).body.code).toBe(40901);
    expect((await orderRow(api.app, orderNo)).status).toBe('completed');
  });

  it('a success notification after the close still counts: paid late, flagged, completed and credited', async () => {
    const orderNo = await newOrder('13.00');
    await orderClose(api.app, merchant, orderNo);
    const before = await api.operator.ledger.balance(merchant.id);
    const res = await notify(orderNo, 1300, 'paid');
    expect(res.body).toBe('success');
    // The sandbox's word is final: settled in the notification's transaction.
    expect(await orderRow(api.app, orderNo)).toMatchObject({ status: 'completed', late_payment: true });
    expect((await api.operator.ledger.balance(merchant.id)).available_fen - before.available_fen).toBe(1300 - 8);
    expect((await eventsOf(api.app, orderNo)).map((e) => e.type)).toEqual(['order.cancelled', 'order.paid', 'order.completed']);
  });

  it('concurrent closes of one order: one close, one event, every answer code 1', async () => {
    const orderNo = await newOrder('14.00');
    const answers = await Promise.all(Array.from({ length: 6 }, () => orderClose(api.app, merchant, orderNo)));
    expect(answers.map((a) => a.body.code)).toEqual(Array(6).fill(1));
    expect(answers.filter((a) => a.body.msg === 'Order closed')).toHaveLength(1);
    expect(await eventsOf(api.app, orderNo)).toHaveLength(1);
  });

  it("an unknown order, or another merchant's, is 40400; a missing order_no is 40000", async () => {
    expect((await orderClose(api.app, merchant, '1'.repeat(22))).body.code).toBe(40400);
    const other = await merchantWithChannels(api.operator);
    const theirs = (await createOrder(api.app, other.merchant, { cny_amount: '1.00', paychannel_id: other.channels.processor })).body.data.order_no;
    expect((await orderClose(api.app, merchant, theirs)).body.code).toBe(40400);
    expect((await orderRow(api.app, theirs)).status).toBe('pending');
    expect((await orderClose(api.app, merchant, '')).body.code).toBe(40000);
  });
});
