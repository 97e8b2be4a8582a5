import { randomBytes } from 'node:crypto';
import { type Channel } from '@app/db';
import { ChannelAdapters, ChannelError, type PayoutOperations, type PayoutRequest, type PayoutStatus } from '@app/channels';
import { QUEUE } from '@app/common';
import { OrderLifecycle, RefundLifecycle, PayoutLifecycle } from '@app/orders';
import type { Credentials } from '@app/operator';
import { JobQueue } from '@app/queue';
import { FakeAlipayGateway, rsaKeyPair } from './fakes/alipay-gateway';
import { FakeWechatpayGateway } from './fakes/wechatpay-gateway';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { waitFor } from './helpers/callbacks';
import { openCashier } from './helpers/cashier';
import { freePort } from './helpers/free-port';
import { books, completedOrder, createSellOrder, entriesOf, orderClose, refundCreate, refundRow } from './helpers/money-out';
import { createOrder, eventsOf, orderRow } from './helpers/orders';

const APP_ID = '2021004100000034';
const MCHID = '1900003434';
const APPID = 'wx3434343434343434';
const SERIAL = '3434343434343434343434343434343434343434';

/**
 * SPEC 6, outcomes a channel did not state (issue 34): a system error, a timeout or a rate limit
 * is not a refusal. The request stays processing, the query decides on a later pass, and money
 * goes back to the merchant only on the provider's documented refusal: whatever the channel
 * answered, the merchant is debited exactly what left the platform and its balance equals its ledger.
 */
describe('money out when the channel does not state the outcome (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let alipay: FakeAlipayGateway;
  let wechat: FakeWechatpayGateway;
  let merchant: Credentials;
  let alipayChannel: number;
  let wechatChannel: number;
  const app = rsaKeyPair();
  const merchantKey = rsaKeyPair();
  const apiV3Key = randomBytes(16).toString('hex');
  let seq = 0;

  beforeAll(async () => {
    const port = await freePort();
    api = await startTestApi({ CHANNEL_ALLOW_HTTP: 'true', PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
    await api.app.listen(port, '127.0.0.1');
    alipay = await new FakeAlipayGateway(APP_ID, app.publicKey).start();
    wechat = await new FakeWechatpayGateway(MCHID, APPID, SERIAL, merchantKey.publicKey, apiV3Key).start();
    // A refund's notification may never come: here the worker's query decides alone.
    alipay.notifyRefunds = false;
    wechat.notifyRefunds = false;
    merchant = await api.operator.merchants.create({ name: 'unknown outcomes shop' });
    const create = async (adapter: 'alipay' | 'wechatpay', payMethod: string, config: Record<string, unknown>): Promise<number> => {
      const { id } = await api.operator.channels.create({
        category: 'processor',
        name: adapter,
        payMethod,
        adapter,
        rate: '0.006',
        config: JSON.stringify(config),
      });
      await api.operator.channels.link(merchant.id, id);
      return id;
    };
    alipayChannel = await create('alipay', 'alipay', {
      app_id: APP_ID,
      private_key: app.privateKey,
      alipay_public_key: alipay.platform.publicKey,
      gateway: alipay.gateway,
    });
    wechatChannel = await create('wechatpay', 'wxpay', {
      mchid: MCHID,
      appid: APPID,
      merchant_serial_no: SERIAL,
      private_key: merchantKey.privateKey,
      apiv3_key: apiV3Key,
      platform_public_key: wechat.platform.publicKey,
      platform_public_key_id: wechat.publicKeyId,
      gateway: wechat.url,
    });
    // Money to refund from beyond the orders under test: a refund does not give the fee back.
    await paid(alipayChannel, '100.00');
  });
  afterAll(async () => {
    await api.close();
    await alipay.stop();
    await wechat.stop();
  });
  afterEach(async () => {
    api.app.get(ChannelAdapters).timeoutMs = 8000;
    expect(alipay.rejected).toEqual([]);
    expect(wechat.rejected).toEqual([]);
    // The merchant's balance is its ledger, whatever happened above.
    const { available, ledgerAvailable } = await books(api.app, merchant.id);
    expect(available).toBe(ledgerAvailable);
  });

  const refunds = (): RefundLifecycle => api.app.get(RefundLifecycle);
  const method = (channel: number): string => (channel === alipayChannel ? 'alipay' : 'wxpay');
  const fen = (yuan: string): number => Math.round(Number(yuan) * 100);

  /** A top-up paid at the fake and completed by its notification. */
  async function paid(channel: number, amount: string): Promise<{ orderNo: string; id: string }> {
    const res = await createOrder(api.app, merchant, { cny_amount: amount, paychannel_id: channel, paychannel_paymethod: method(channel) });
    expect(res.body.code).toBe(1);
    const orderNo = res.body.data.order_no;
    await openCashier(res.body.data.pay_url!);
    if (channel === alipayChannel) {
      const delivery = alipay.pay(orderNo);
      await waitFor(() => delivery.answers[0], 10_000, 'the notification answered');
    } else {
      const delivery = wechat.pay(orderNo)!;
      await waitFor(() => delivery.answers[0], 10_000, 'the notification answered');
    }
    expect((await orderRow(api.app, orderNo)).status).toBe('completed');
    return { orderNo, id: (await orderRow(api.app, orderNo)).id as string };
  }

  async function refund(orderNo: string, amount: string): Promise<{ refundNo: string; id: string }> {
    const res = await refundCreate(api.app, merchant, { order_no: orderNo, refund_amount: amount, merchant_refund_no: `u-${orderNo}-${++seq}` });
    expect(res.body.code).toBe(1);
    return { refundNo: res.body.data.refund_no, id: (await refundRow(api.app, res.body.data.refund_no)).id as string };
  }

  /** What the merchant was debited for an order's refunds, net of what came back. */
  async function refundedFromMerchant(orderNo: string): Promise<number> {
    return 0 - (await entriesOf(api.app, orderNo)).filter((e) => e.kind.startsWith('refund_')).reduce((sum, e) => sum + e.amount_fen, 0);
  }

  const alipayRefunded = (orderNo: string): number => [...alipay.trades.get(orderNo)!.refunds.values()].reduce((sum, r) => sum + fen(r.amount), 0);
  const wechatRefunded = (orderNo: string): number => [...wechat.trades.get(orderNo)!.refunds.values()].reduce((sum, r) => sum + r.amount, 0);

  it('the double refund of issue 34: a refund answered 40004 ACQ.SYSTEM_ERROR after Alipay made it stays processing, the query settles it, the merchant is debited what left', async () => {
    const order = await paid(alipayChannel, '10.00');
    alipay.failNext('alipay.trade.refund', 'system-error-after-doing');
    const first = await refund(order.orderNo, '6.00');
    await expect(refunds().process(first.id)).rejects.toThrow(/ACQ\.SYSTEM_ERROR/);
    // Alipay paid it out; we do not know yet: processing, still debited, nothing given back.
    expect(alipayRefunded(order.orderNo)).toBe(600);
    expect((await refundRow(api.app, first.refundNo)).status).toBe('processing');
    expect(await refundedFromMerchant(order.orderNo)).toBe(600);
    // The second refund of issue 34 waits for the first to settle.
    expect(
      (await refundCreate(api.app, merchant, { order_no: order.orderNo, refund_amount: '4.00', merchant_refund_no: `u-${order.orderNo}-x` })).body.code,
    ).toBe(40901);

    // The worker's next pass queries: the refund was made.
    await refunds().process(first.id);
    expect((await refundRow(api.app, first.refundNo)).status).toBe('succeeded');
    const second = await refund(order.orderNo, '4.00');
    await refunds().process(second.id);
    expect((await refundRow(api.app, second.refundNo)).status).toBe('succeeded');

    expect(alipayRefunded(order.orderNo)).toBe(1000);
    expect(await refundedFromMerchant(order.orderNo)).toBe(1000);
    expect((await entriesOf(api.app, order.orderNo)).filter((e) => e.kind === 'refund_reversal')).toEqual([]);
    expect((await eventsOf(api.app, order.orderNo)).map((e) => e.type)).toEqual(['order.paid', 'order.completed', 'refund.succeeded', 'refund.succeeded']);
  });

  it('a refund whose answer never came (a timeout after Alipay made it) is settled by the query, never asked again', async () => {
    const order = await paid(alipayChannel, '5.00');
    api.app.get(ChannelAdapters).timeoutMs = 300;
    alipay.failNext('alipay.trade.refund', 'hang-after-doing');
    const made = await refund(order.orderNo, '5.00');
    await expect(refunds().process(made.id)).rejects.toThrow(/timed out/);
    expect(await refundedFromMerchant(order.orderNo)).toBe(500);
    api.app.get(ChannelAdapters).timeoutMs = 8000;
    await refunds().process(made.id);
    expect((await refundRow(api.app, made.refundNo)).status).toBe('succeeded');
    expect(alipay.apiCalls.filter((c) => c.method === 'alipay.trade.refund' && c.biz.out_request_no === made.refundNo)).toHaveLength(1);
    expect([alipayRefunded(order.orderNo), await refundedFromMerchant(order.orderNo)]).toEqual([500, 500]);
  });

  it("only Alipay's documented refusal gives the debit back: ACQ.TRADE_STATUS_ERROR fails the refund, once", async () => {
    const order = await paid(alipayChannel, '3.00');
    // The trade ended at Alipay (its refund period over): Alipay refuses, nothing leaves.
    alipay.trades.get(order.orderNo)!.status = 'TRADE_FINISHED';
    const refused = await refund(order.orderNo, '1.00');
    await refunds().process(refused.id);
    expect(await refundRow(api.app, refused.refundNo)).toMatchObject({ status: 'failed', failure: 'alipay 40004 ACQ.TRADE_STATUS_ERROR 交易状态不合法' });
    expect([alipayRefunded(order.orderNo), await refundedFromMerchant(order.orderNo)]).toEqual([0, 0]);
    await refunds().process(refused.id);
    expect((await entriesOf(api.app, order.orderNo)).filter((e) => e.kind === 'refund_reversal')).toHaveLength(1);
  });

  it('a WeChat refund answered 500 SYSTEM_ERROR after WeChat made it, or 429 FREQUENCY_LIMITED, stays processing; the query decides', async () => {
    const order = await paid(wechatChannel, '8.00');
    wechat.failNext('refund', 'system-error-after-doing');
    const first = await refund(order.orderNo, '5.00');
    await expect(refunds().process(first.id)).rejects.toThrow(/HTTP 500 SYSTEM_ERROR/);
    expect([(await refundRow(api.app, first.refundNo)).status, wechatRefunded(order.orderNo), await refundedFromMerchant(order.orderNo)]).toEqual([
      'processing',
      500,
      500,
    ]);
    await refunds().process(first.id);
    expect((await refundRow(api.app, first.refundNo)).status).toBe('succeeded');

    // Rate limited before anything was done: the query finds nothing, so it is asked again, once.
    wechat.failNext('refund', 'rate-limited');
    const second = await refund(order.orderNo, '3.00');
    await expect(refunds().process(second.id)).rejects.toThrow(/HTTP 429 FREQUENCY_LIMITED/);
    expect((await refundRow(api.app, second.refundNo)).status).toBe('processing');
    await refunds().process(second.id);
    expect((await refundRow(api.app, second.refundNo)).status).toBe('succeeded');

    expect([wechatRefunded(order.orderNo), await refundedFromMerchant(order.orderNo)]).toEqual([800, 800]);
    expect((await eventsOf(api.app, order.orderNo)).map((e) => e.type)).toEqual(['order.paid', 'order.completed', 'refund.succeeded', 'refund.succeeded']);
  });

  it('a close answered ACQ.SYSTEM_ERROR while the payer had paid: the order.close job queries, and the payment is credited once', async () => {
    const res = await createOrder(api.app, merchant, { cny_amount: '2.30', paychannel_id: alipayChannel });
    const orderNo = res.body.data.order_no;
    await openCashier(res.body.data.pay_url!);
    alipay.pay(orderNo, { notify: 'never' });
    alipay.failNext('alipay.trade.close', 'system-error');
    const before = await books(api.app, merchant.id);
    expect((await orderClose(api.app, merchant, orderNo)).body).toMatchObject({ code: 1, data: { status: 'cancelled' } });
    const id = (await orderRow(api.app, orderNo)).id as string;
    expect(await api.app.get(JobQueue).queue(QUEUE.orders).getJob(`close-${id}`)).toBeDefined();

    // The worker runs the job: the query says paid, so it counts as a late payment, credited once.
    await api.app.get(OrderLifecycle).settleClose(id);
    expect(await orderRow(api.app, orderNo)).toMatchObject({ status: 'completed', late_payment: true });
    await api.app.get(OrderLifecycle).settleClose(id);
    expect((await books(api.app, merchant.id)).available - before.available).toBe(230 - 1);
    expect((await eventsOf(api.app, orderNo)).map((e) => e.type)).toEqual(['order.cancelled', 'order.paid', 'order.completed']);
  });

  it('a WeChat close refused as paid (a documented refusal) lets the query decide too; an unpaid one closed again ends the job', async () => {
    const res = await createOrder(api.app, merchant, { cny_amount: '2.40', paychannel_id: wechatChannel, paychannel_paymethod: 'wxpay' });
    const orderNo = res.body.data.order_no;
    await openCashier(res.body.data.pay_url!);
    wechat.pay(orderNo, { notify: 'never' });
    expect((await orderClose(api.app, merchant, orderNo)).body.code).toBe(1);
    const id = (await orderRow(api.app, orderNo)).id as string;
    await api.app.get(OrderLifecycle).settleClose(id);
    expect(await orderRow(api.app, orderNo)).toMatchObject({ status: 'completed', late_payment: true });

    const unpaid = await createOrder(api.app, merchant, { cny_amount: '2.50', paychannel_id: wechatChannel, paychannel_paymethod: 'wxpay' });
    await openCashier(unpaid.body.data.pay_url!);
    wechat.failNext('close', 'rate-limited');
    expect((await orderClose(api.app, merchant, unpaid.body.data.order_no)).body.code).toBe(1);
    const unpaidId = (await orderRow(api.app, unpaid.body.data.order_no)).id as string;
    await api.app.get(OrderLifecycle).settleClose(unpaidId);
    expect(wechat.trades.get(unpaid.body.data.order_no)!.state).toBe('CLOSED');
    expect((await orderRow(api.app, unpaid.body.data.order_no)).status).toBe('cancelled');
  });

  describe('payouts', () => {
    let testMerchant: Credentials;
    let sandbox: number;

    /**
     * A payout channel's books: it pays and may lose its answer after paying (a timeout); its query
     * answers from the books. Put in place of the sandbox's payouts for one channel.
     */
    const desk = {
      paid: new Map<string, number>(),
      loseNextAnswer: false,
      operations: {
        payout: async (request: PayoutRequest): Promise<PayoutStatus> => {
          desk.paid.set(request.orderNo, (desk.paid.get(request.orderNo) ?? 0) + request.amountFen);
          if (desk.loseNextAnswer) {
            desk.loseNextAnswer = false;
            throw new ChannelError('channel call timed out after 8000 ms');
          }
          return { state: 'paid', channelPayoutNo: `DESK${request.orderNo}` };
        },
        queryPayout: async (request: PayoutRequest): Promise<PayoutStatus> =>
          desk.paid.has(request.orderNo) ? { state: 'paid', channelPayoutNo: `DESK${request.orderNo}` } : { state: 'not_found', channelPayoutNo: null },
      } satisfies PayoutOperations,
    };

    beforeAll(async () => {
      const made = await merchantWithChannels(api.operator);
      testMerchant = made.merchant;
      sandbox = made.channels.remotepay;
      await completedOrder(api.app, testMerchant, { cny_amount: '100.00', paychannel_id: sandbox });
      const adapters = api.app.get(ChannelAdapters);
      const original = adapters.forChannel.bind(adapters);
      jest.spyOn(adapters, 'forChannel').mockImplementation((channel: Channel) => {
        const adapter = original(channel);
        return channel.id === sandbox ? Object.assign(Object.create(adapter) as typeof adapter, { payouts: desk.operations }) : adapter;
      });
    });
    afterAll(() => jest.restoreAllMocks());

    it('a payout whose answer was lost after paying stays pending and debited; the query completes it, paid once, never reversed', async () => {
      desk.loseNextAnswer = true;
      const res = await createSellOrder(api.app, testMerchant, { cny_amount: '20.00', paychannel_id: sandbox });
      const orderNo = res.body.data.order_no;
      const id = (await orderRow(api.app, orderNo)).id as string;
      const sellOrders = api.app.get(PayoutLifecycle);
      await expect(sellOrders.payout(id)).rejects.toThrow(/timed out/);
      expect((await orderRow(api.app, orderNo)).status).toBe('pending');
      await sellOrders.payout(id);
      expect((await orderRow(api.app, orderNo)).status).toBe('completed');
      expect(desk.paid.get(orderNo)).toBe(2000);
      expect((await entriesOf(api.app, orderNo)).map((e) => [e.kind, e.amount_fen])).toEqual([['sell_debit', -2012]]);
      const { available, ledgerAvailable } = await books(api.app, testMerchant.id);
      expect(available).toBe(ledgerAvailable);
    });
  });
});
