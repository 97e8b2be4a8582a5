import { Logger } from '@nestjs/common';
import { AlipayAdapter, ChannelAdapters } from '@app/channels';
import { ChannelRepository, LostNotificationRepository } from '@app/db';
import { OrderLifecycle, RefundLifecycle } from '@app/orders';
import type { Credentials } from '@app/operator';
import { LostNotificationLoop } from '../apps/worker/src/orders/lost-notification-loop';
import { FakeAlipayGateway, rsaKeyPair } from './fakes/alipay-gateway';
import { type TestApi, post, signed, startTestApi } from './helpers/api';
import { waitFor } from './helpers/callbacks';
import { freePort } from './helpers/free-port';
import { openCashier, payLink } from './helpers/cashier';
import { createSellOrder, entriesOf, orderClose, refundCreate, refundRow } from './helpers/money-out';
import { createOrder, eventsOf, orderRow, sql } from './helpers/orders';

const APP_ID = '2021004100000001';

describe('alipay adapter against a fake Alipay gateway (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let alipay: FakeAlipayGateway;
  let merchant: Credentials;
  let channel: number;
  const app = rsaKeyPair();
  let configText: string;

  /** Every line the service logs through Nest's Logger while this file runs (pino formats the same arguments). */
  const logged: string[] = [];

  beforeAll(async () => {
    for (const level of ['log', 'warn', 'error', 'debug', 'verbose'] as const) {
      const original = Logger.prototype[level];
      jest.spyOn(Logger.prototype, level).mockImplementation(function (this: Logger, ...args: unknown[]) {
        logged.push(JSON.stringify(args));
        return (original as (...a: unknown[]) => void).apply(this, args);
      });
    }
    const port = await freePort();
    // The fake gateway speaks plain http on localhost; it posts notifications to this API, listening.
    api = await startTestApi({ CHANNEL_ALLOW_HTTP: 'true', PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
    await api.app.listen(port, '127.0.0.1');
    alipay = await new FakeAlipayGateway(APP_ID, app.publicKey).start();
    merchant = await api.operator.merchants.create({ name: 'alipay shop' });
    configText = JSON.stringify({ app_id: APP_ID, private_key: app.privateKey, alipay_public_key: alipay.platform.publicKey, gateway: alipay.gateway });
    channel = (
      await api.operator.channels.create({ category: 'processor', name: 'Alipay', payMethod: 'alipay', adapter: 'alipay', rate: '0.006', config: configText })
    ).id;
    await api.operator.channels.link(merchant.id, channel);
  });
  afterAll(async () => {
    await api.close();
    await alipay.stop();
  });
  afterEach(() => {
    alipay.api = 'normal';
    api.app.get(ChannelAdapters).timeoutMs = 8000;
    expect(alipay.rejected).toEqual([]);
  });

  const notifyUrl = (): string => `${api.config.publicBaseUrl}/api/channel/notify/${channel}`;
  const lifecycle = (): OrderLifecycle => api.app.get(OrderLifecycle);

  /**
   * createOrder, then the payer opens pay_url on a computer: the cashier's link to page pay, which
   * the fake verifies (our signature) and opens the trade for.
   */
  async function openedOrder(amount: string): Promise<{ orderNo: string; id: string; payUrl: string; gatewayUrl: string; page: string }> {
    const res = await createOrder(api.app, merchant, { cny_amount: amount, paychannel_id: channel, paychannel_paymethod: 'alipay' });
    expect(res.body.code).toBe(1);
    const payUrl = res.body.data.pay_url!;
    const { cashier, provider } = await openCashier(payUrl);
    return {
      orderNo: res.body.data.order_no,
      id: (await orderRow(api.app, res.body.data.order_no)).id as string,
      payUrl,
      gatewayUrl: payLink(cashier)!,
      page: provider!,
    };
  }

  async function completed(amount: string): Promise<{ orderNo: string; id: string }> {
    const order = await openedOrder(amount);
    const delivery = alipay.pay(order.orderNo);
    await waitFor(() => delivery.answers[0], 10_000, 'the notification answered');
    expect((await orderRow(api.app, order.orderNo)).status).toBe('completed');
    return order;
  }

  it('create -> the payer presses Pay -> signed notification -> paid -> completed in its transaction, credited once, callbacks queued', async () => {
    const before = await api.operator.ledger.balance(merchant.id);
    const order = await openedOrder('10.00');
    // pay_url is the cashier's; on a computer its pay link is page pay, signed.
    expect(order.payUrl).toMatch(new RegExp(`^${api.config.publicBaseUrl}/pay/${order.orderNo}\\?token=`));
    const url = new URL(order.gatewayUrl);
    expect(`${url.origin}${url.pathname}`).toBe(alipay.gateway);
    const params = Object.fromEntries(url.searchParams);
    expect(params).toMatchObject({ app_id: APP_ID, method: 'alipay.trade.page.pay', sign_type: 'RSA2', charset: 'utf-8', notify_url: notifyUrl() });
    expect(JSON.parse(params.biz_content)).toMatchObject({
      out_trade_no: order.orderNo,
      total_amount: '10.00',
      subject: `Order ${order.orderNo}`,
      product_code: 'FAST_INSTANT_TRADE_PAY',
    });
    // No return_url given: Alipay sends the payer back to the cashier's waiting screen.
    expect(params.return_url).toBe(`${order.payUrl}&step=wait&lang=en`);
    // time_expire is the order's expiry in Beijing time.
    const expiresAt = (await orderRow(api.app, order.orderNo)).expires_at as Date;
    expect(JSON.parse(params.biz_content).time_expire).toBe(new Date(expiresAt.getTime() + 8 * 3600_000).toISOString().slice(0, 19).replace('T', ' '));
    expect(order.page).toContain('<button>Pay</button>');

    const paid = await fetch(`${alipay.url}/cashier/pay`, { method: 'POST', body: new URLSearchParams({ out_trade_no: order.orderNo }) });
    expect(paid.status).toBe(200);
    const delivery = alipay.deliveries.at(-1)!;
    await waitFor(() => delivery.answers[0], 10_000, 'the notification answered');
    expect(delivery.answers).toEqual([{ status: 200, body: 'success' }]);
    // Signed with Alipay's private key, the notification is its final word (SPEC 5): no re-query, settled at once.
    expect(await orderRow(api.app, order.orderNo)).toMatchObject({ status: 'completed', channel_trade_no: alipay.trades.get(order.orderNo)!.tradeNo });
    await lifecycle().confirm(order.id);
    expect(alipay.apiCalls.filter((c) => c.method === 'alipay.trade.query' && c.biz.out_trade_no === order.orderNo)).toHaveLength(0);
    expect((await eventsOf(api.app, order.orderNo)).map((e) => [e.type, e.deliveries])).toEqual([
      ['order.paid', 1],
      ['order.completed', 1],
    ]);
    const after = await api.operator.ledger.balance(merchant.id);
    expect(after.available_fen - before.available_fen).toBe(1000 - 6);
  });

  it('a duplicate notification is answered success and credits once', async () => {
    const order = await openedOrder('5.00');
    alipay.pay(order.orderNo, { notify: 'twice' });
    const [first, second] = alipay.deliveries.slice(-2);
    await waitFor(() => first.answers[0] && second.answers[0], 10_000, 'both answered');
    expect([first.answers[0].body, second.answers[0].body]).toEqual(['success', 'success']);
    await lifecycle().confirm(order.id);
    const replay = await alipay.post(notifyUrl(), first.params);
    expect(replay.body).toBe('success');
    expect((await entriesOf(api.app, order.orderNo)).filter((e) => e.kind === 'order_credit')).toHaveLength(1);
    expect((await eventsOf(api.app, order.orderNo)).map((e) => e.type)).toEqual(['order.paid', 'order.completed']);
  });

  it('tampered, unsigned, wrongly keyed and other-app notifications change nothing and are answered fail (so Alipay retries)', async () => {
    const order = await openedOrder('7.00');
    const trade = alipay.trades.get(order.orderNo)!;
    const genuine = alipay.notification(trade);
    const { sign: _sign, ...unsigned } = genuine;
    const forgers = rsaKeyPair();
    const cases: Record<string, Record<string, string>> = {
      tampered: { ...genuine, total_amount: '0.01' },
      unsigned,
      'wrong key': alipay.notification(trade, {}, { signer: forgers.privateKey }),
      'our own app key': alipay.notification(trade, {}, { signer: app.privateKey }),
      'other app_id': alipay.notification(trade, { app_id: '2021009999999999', auth_app_id: '2021009999999999' }),
      'an empty value dropped from the signed content': { ...genuine, body: undefined } as unknown as Record<string, string>,
      'unknown order': alipay.notification({ ...trade, outTradeNo: '2026010100000099999999' }),
    };
    for (const [name, params] of Object.entries(cases)) {
      const answer = await alipay.post(notifyUrl(), JSON.parse(JSON.stringify(params)) as Record<string, string>);
      expect([name, answer.status, answer.body]).toEqual([name, 200, 'fail']);
    }
    // Verified, but nothing to move: WAIT_BUYER_PAY is answered success so Alipay stops, and changes nothing.
    expect((await alipay.post(notifyUrl(), alipay.notification(trade, { trade_status: 'WAIT_BUYER_PAY' }))).body).toBe('success');
    expect((await orderRow(api.app, order.orderNo)).status).toBe('pending');
    expect(await eventsOf(api.app, order.orderNo)).toEqual([]);
  });

  it('a notification with empty values (body=, passback_params=) verifies under the content rule of alipay-sdk, and pays', async () => {
    const order = await openedOrder('7.50');
    const trade = alipay.trades.get(order.orderNo)!;
    trade.status = 'TRADE_SUCCESS';
    const params = alipay.notification(trade, { passback_params: '' });
    expect([params.body, params.passback_params]).toEqual(['', '']);
    expect(await alipay.post(notifyUrl(), params)).toEqual({ status: 200, body: 'success' });
    expect((await orderRow(api.app, order.orderNo)).status).toBe('completed');
  });

  it('TRADE_CLOSED (Alipay closed the unpaid trade) cancels a pending order and is answered success', async () => {
    const order = await openedOrder('7.60');
    const closed = alipay.expire(order.orderNo);
    await waitFor(() => closed.answers[0], 10_000, 'the TRADE_CLOSED notification answered');
    expect(closed.answers).toEqual([{ status: 200, body: 'success' }]);
    expect(await orderRow(api.app, order.orderNo)).toMatchObject({ status: 'cancelled' });
    const events = await eventsOf(api.app, order.orderNo);
    expect(events.map((e) => [e.type, (e.payload as { reason?: string }).reason])).toEqual([['order.cancelled', 'closed']]);
    // Sent again: answered success, nothing moves twice.
    expect((await alipay.post(notifyUrl(), closed.params)).body).toBe('success');
    expect(await eventsOf(api.app, order.orderNo)).toHaveLength(1);
  });

  it('TRADE_FINISHED pays an order whose TRADE_SUCCESS was lost, and changes nothing on a completed one; both answered success', async () => {
    const lost = await openedOrder('7.70');
    alipay.pay(lost.orderNo, { notify: 'never' });
    const finished = alipay.finish(lost.orderNo);
    await waitFor(() => finished.answers[0], 10_000, 'the TRADE_FINISHED notification answered');
    expect(finished.answers[0].body).toBe('success');
    expect((await orderRow(api.app, lost.orderNo)).status).toBe('completed');
    const done = await completed('7.80');
    const again = alipay.finish(done.orderNo);
    await waitFor(() => again.answers[0], 10_000, 'answered');
    expect(again.answers[0].body).toBe('success');
    expect((await eventsOf(api.app, done.orderNo)).map((e) => e.type)).toEqual(['order.paid', 'order.completed']);
  });

  it('a verified notification with another amount changes nothing and is recorded as payment.amount_mismatch', async () => {
    const order = await openedOrder('8.00');
    const delivery = alipay.deliver(notifyUrl(), alipay.notification(alipay.trades.get(order.orderNo)!, { total_amount: '0.80' }));
    await waitFor(() => delivery.answers[0], 10_000, 'answered');
    expect(delivery.answers[0].body).toBe('fail');
    expect((await orderRow(api.app, order.orderNo)).status).toBe('pending');
    const [event] = await eventsOf(api.app, order.orderNo);
    expect(event.type).toBe('payment.amount_mismatch');
    expect(JSON.stringify(event.payload)).toContain(alipay.trades.get(order.orderNo)!.tradeNo);
  });

  it('Alipay retries an unanswered notification until the service says success', async () => {
    const order = await openedOrder('6.00');
    const delivery = alipay.deliver(`${api.config.publicBaseUrl}/api/channel/notify/999999`, alipay.notification(alipay.trades.get(order.orderNo)!));
    await waitFor(() => delivery.answers.length === alipay.retryGapsMs.length + 1, 10_000, 'all retries');
    expect(delivery.answers.every((a) => a.body !== 'success')).toBe(true);
    const retried = alipay.deliver(notifyUrl(), alipay.notification(alipay.trades.get(order.orderNo)!));
    await waitFor(() => retried.answers.at(-1)?.body === 'success', 10_000, 'accepted');
    expect(retried.answers).toHaveLength(1);
  });

  it('a gateway answer with a wrong or missing signature, a 5xx or a timeout never confirms a payment', async () => {
    const order = await openedOrder('4.00');
    alipay.pay(order.orderNo, { notify: 'never' });
    // Left paid for the confirm job's query, as a version before paid settled at once left it.
    await sql(api.app).query(`UPDATE "orders" SET "status" = 'paid', "paid_at" = now() WHERE "id" = $1`, [order.id]);
    for (const behaviour of ['bad-signature', 'unsigned', 'http-500'] as const) {
      alipay.api = behaviour;
      await expect(lifecycle().confirm(order.id)).rejects.toThrow(/signature does not verify|unsigned answer|HTTP 500/);
    }
    alipay.api = 'hang';
    api.app.get(ChannelAdapters).timeoutMs = 300;
    await expect(lifecycle().confirm(order.id)).rejects.toThrow(/timed out/);
    expect((await orderRow(api.app, order.orderNo)).status).toBe('paid');
    alipay.api = 'normal';
    await lifecycle().confirm(order.id);
    expect((await orderRow(api.app, order.orderNo)).status).toBe('completed');
  });

  describe('lost notifications (SPEC 6)', () => {
    const loop = (): LostNotificationLoop =>
      new LostNotificationLoop(api.app.get(LostNotificationRepository), api.app.get(ChannelRepository), api.app.get(ChannelAdapters), lifecycle());
    const queriesOf = (orderNo: string): number => alipay.apiCalls.filter((c) => c.method === 'alipay.trade.query' && c.biz.out_trade_no === orderNo).length;
    const age = (orderNo: string, seconds: number): Promise<unknown> =>
      sql(api.app).query(`UPDATE "orders" SET "created_at" = "created_at" - make_interval(secs => $2) WHERE "order_no" = $1`, [orderNo, seconds]);

    it('a payment whose notification never came is found by the 1-minute query, and counts once', async () => {
      const before = await api.operator.ledger.balance(merchant.id);
      const order = await openedOrder('2.00');
      alipay.pay(order.orderNo, { notify: 'never' });
      await loop().pass();
      expect([queriesOf(order.orderNo), (await orderRow(api.app, order.orderNo)).status]).toEqual([0, 'pending']);
      await age(order.orderNo, 61);
      expect(await loop().pass()).toBeGreaterThanOrEqual(1);
      expect(queriesOf(order.orderNo)).toBe(1);
      // Alipay's signed query answer is as final as its notification: settled at once.
      expect(await orderRow(api.app, order.orderNo)).toMatchObject({ status: 'completed', channel_trade_no: alipay.trades.get(order.orderNo)!.tradeNo });
      await loop().pass();
      expect(queriesOf(order.orderNo)).toBe(1);
      // The notification arrives after all: answered success, nothing moves twice.
      expect((await alipay.post(notifyUrl(), alipay.notification(alipay.trades.get(order.orderNo)!))).body).toBe('success');
      await lifecycle().confirm(order.id);
      expect((await eventsOf(api.app, order.orderNo)).map((e) => e.type)).toEqual(['order.paid', 'order.completed']);
      expect((await api.operator.ledger.balance(merchant.id)).available_fen - before.available_fen).toBe(200 - 1);
    });

    it('an unpaid order is asked at 1 min, 5 min and just before expiry, once each', async () => {
      const order = await openedOrder('2.50');
      await age(order.orderNo, 61);
      await loop().pass();
      await loop().pass();
      expect(queriesOf(order.orderNo)).toBe(1);
      await age(order.orderNo, 240);
      await loop().pass();
      expect(queriesOf(order.orderNo)).toBe(2);
      await sql(api.app).query(`UPDATE "orders" SET "expires_at" = now() + interval '30 seconds' WHERE "order_no" = $1`, [order.orderNo]);
      await loop().pass();
      await loop().pass();
      expect(queriesOf(order.orderNo)).toBe(3);
      expect((await orderRow(api.app, order.orderNo)).status).toBe('pending');
    });
  });

  it('orderClose closes the trade at Alipay (alipay.trade.close)', async () => {
    const order = await openedOrder('3.00');
    const closed = await orderClose(api.app, merchant, order.orderNo);
    expect([closed.body.code, closed.body.data.status]).toEqual([1, 'cancelled']);
    expect(alipay.trades.get(order.orderNo)!.status).toBe('TRADE_CLOSED');
    // A trade the payer never opened does not exist at Alipay: closing it is still fine.
    const unopened = await createOrder(api.app, merchant, { cny_amount: '3.00', paychannel_id: channel });
    expect((await orderClose(api.app, merchant, unopened.body.data.order_no)).body.code).toBe(1);
    expect(alipay.apiCalls.filter((c) => c.method === 'alipay.trade.close').map((c) => c.biz.out_trade_no)).toEqual([
      order.orderNo,
      unopened.body.data.order_no,
    ]);
  });

  it('a partial then a full refund through alipay.trade.refund, out_request_no = refund_no', async () => {
    const order = await completed('10.00');
    const refunds = api.app.get(RefundLifecycle);
    let seq = 0;
    for (const amount of ['3.00', '7.00']) {
      const res = await refundCreate(api.app, merchant, {
        order_no: order.orderNo,
        refund_amount: amount,
        merchant_refund_no: `ali-r-${order.orderNo}-${++seq}`,
      });
      expect(res.body.code).toBe(1);
      const row = await refundRow(api.app, res.body.data.refund_no);
      await refunds.process(row.id as string);
      expect((await refundRow(api.app, res.body.data.refund_no)).status).toBe('succeeded');
      expect(alipay.trades.get(order.orderNo)!.refunds.get(res.body.data.refund_no)).toEqual({ amount });
    }
    expect((await eventsOf(api.app, order.orderNo)).map((e) => e.type)).toEqual(['order.paid', 'order.completed', 'refund.succeeded', 'refund.succeeded']);
    const more = await refundCreate(api.app, merchant, { order_no: order.orderNo, refund_amount: '0.01', merchant_refund_no: `ali-r-${order.orderNo}-x` });
    expect(more.body.code).not.toBe(1);
    // Alipay's refund notices (partial: TRADE_SUCCESS, full: TRADE_CLOSED, with out_biz_no) verify and are answered success; nothing moves again.
    const notices = alipay.deliveries.filter((d) => d.params.out_trade_no === order.orderNo && d.params.out_biz_no);
    expect(notices.map((d) => d.params.trade_status)).toEqual(['TRADE_SUCCESS', 'TRADE_CLOSED']);
    await waitFor(() => notices.every((d) => d.answers.length > 0), 10_000, 'the refund notices answered');
    expect(notices.map((d) => d.answers)).toEqual([[{ status: 200, body: 'success' }], [{ status: 200, body: 'success' }]]);
    expect((await orderRow(api.app, order.orderNo)).status).toBe('completed');
    expect(await eventsOf(api.app, order.orderNo)).toHaveLength(4);
  });

  it("an unsigned gateway error is reported as Alipay's code and message, not as a signature failure", async () => {
    const order = await openedOrder('4.10');
    alipay.pay(order.orderNo, { notify: 'never' });
    await sql(api.app).query(`UPDATE "orders" SET "status" = 'paid', "paid_at" = now() WHERE "id" = $1`, [order.id]);
    alipay.failNext('alipay.trade.query', 'unsigned-error');
    await expect(lifecycle().confirm(order.id)).rejects.toThrow(
      'alipay alipay.trade.query: alipay 20000 isp.unknow-error 系统繁忙 (unsigned answer, outcome unknown)',
    );
    // A request Alipay cannot verify (a channel holding another app key) is answered 40002, unsigned.
    const other = rsaKeyPair();
    const adapter = new AlipayAdapter(
      { app_id: APP_ID, private_key: other.privateKey, alipay_public_key: alipay.platform.publicKey, gateway: alipay.gateway },
      (orderNo) => `https://pay.example/pay/${orderNo}`,
      undefined,
      true,
    );
    const query = { orderNo: order.orderNo, amountFen: 410, channelTradeNo: null, paidAt: null };
    await expect(adapter.queryPayment(query, AbortSignal.timeout(5000))).rejects.toThrow(/alipay 40002 isv.invalid-signature 验签出错 \(unsigned answer/);
    expect(alipay.rejected.splice(0)).toEqual([{ method: 'alipay.trade.query', why: 'isv.invalid-signature' }]);
    await lifecycle().confirm(order.id);
    expect((await orderRow(api.app, order.orderNo)).status).toBe('completed');
  });

  it("channel:create --mode test: a channel pointed at Alipay's sandbox serves test merchants only", async () => {
    const { id } = await api.operator.channels.create({
      category: 'processor',
      name: 'Alipay sandbox',
      payMethod: 'alipay',
      adapter: 'alipay',
      mode: 'test',
      config: configText,
    });
    await expect(api.operator.channels.link(merchant.id, id)).rejects.toThrow(/moves test money/);
    const tester = await api.operator.merchants.create({ name: 'alipay tester', mode: 'test' });
    await api.operator.channels.link(tester.id, id);
    await expect(api.operator.channels.link(tester.id, channel)).rejects.toThrow(/moves live money/);
    const res = await createOrder(api.app, tester, { cny_amount: '1.00', paychannel_id: id });
    expect(res.body.code).toBe(1);
    expect(new URL(payLink((await openCashier(res.body.data.pay_url!)).cashier)!).origin).toBe(alipay.url);
    const listed = await post<{ list: { id: number }[] }>(api.app, '/api/merchant/getPayChannels', signed(tester, { category: 'processor' }));
    expect(listed.body.data.list.map((c) => c.id)).toEqual([id]);
    await expect(api.operator.channels.create({ category: 'processor', name: 'x', payMethod: 'alipay', adapter: 'sandbox', mode: 'live' })).rejects.toThrow(
      /only moves test money/,
    );
    await expect(
      api.operator.channels.create({ category: 'processor', name: 'x', payMethod: 'alipay', adapter: 'alipay', mode: 'real', config: configText }),
    ).rejects.toThrow(/mode must be live or test/);
  });

  it('channel:create checks the alipay config: required keys, PEM keys, no unknown key; no value in the message', async () => {
    const attempt = (config: Record<string, string>) =>
      api.operator.channels.create({ category: 'processor', name: 'x', payMethod: 'alipay', adapter: 'alipay', config: JSON.stringify(config) });
    const good = JSON.parse(configText) as Record<string, string>;
    await expect(attempt({ app_id: APP_ID, private_key: good.private_key })).rejects.toThrow(
      /needs alipay_public_key \(public-key mode\) or app_cert, alipay_cert, alipay_root_cert \(public-key certificate mode\)/,
    );
    await expect(attempt({ ...good, private_key: 'not a key' })).rejects.toThrow(/config.private_key must be a private key in PEM/);
    await expect(attempt({ ...good, app_cert: 'x' })).rejects.toThrow(/config.app_cert must be a certificate/);
    await expect(attempt({ ...good, modes: 'page,qr' } as Record<string, string>)).rejects.toThrow(/config.modes must be a list of distinct page, wap/);
    await expect(attempt({ ...good, secret_key: 'k' })).rejects.toThrow(/"secret_key" is not allowed/);
    await expect(attempt({ ...good, gateway: 'ftp://x' })).rejects.toThrow(/config.gateway must be http or https/);
    await attempt({ ...good, alipay_public_key: 'garbage-public-key-value' }).catch((err: Error) => expect(err.message).not.toContain('garbage'));
  });

  it('sell orders are not offered (40302); no config value in any answer', async () => {
    const sell = await createSellOrder(api.app, merchant, {
      cny_amount: '1.00',
      paychannel_id: channel,
      payee_name: '张三',
      payee_account: '6222021234567890',
      payee_bank: '工商银行',
    });
    expect(sell.body.code).toBe(40302);
    const channels = await post(api.app, '/api/merchant/getPayChannels', signed(merchant, { category: 'processor' }));
    const created = await createOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: channel });
    const everything = JSON.stringify([channels.body, created.body, sell.body]);
    const config = JSON.parse(configText) as Record<string, string>;
    for (const secret of [config.private_key, config.alipay_public_key]) {
      for (const line of secret.split('\n').filter((l) => l.length > 20)) expect(everything).not.toContain(line);
    }
    expect(JSON.stringify([channels.body, created.body, sell.body])).not.toContain(alipay.gateway);
  });

  it('no key or config value in any log line of everything above', () => {
    // The refusals and channel failures above were logged: the check sees the lines that could leak.
    expect(logged.join('\n')).toContain('notification refused');
    const all = logged.join('\n');
    for (const value of [...app.privateKey.split('\n').filter((l) => l.length > 20), ...alipay.platform.publicKey.split('\n').filter((l) => l.length > 20)])
      expect(all).not.toContain(value);
  });
});
