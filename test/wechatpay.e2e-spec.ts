import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { ChannelAdapters, WechatpayAdapter } from '@app/channels';
import { ChannelRepository, LostNotificationRepository } from '@app/db';
import { OrderLifecycle, RefundLifecycle } from '@app/orders';
import type { Credentials } from '@app/operator';
import { LostNotificationLoop } from '../apps/worker/src/orders/lost-notification-loop';
import { rsaKeyPair } from './fakes/alipay-gateway';
import { FakeWechatpayGateway, type WechatNotification } from './fakes/wechatpay-gateway';
import { type TestApi, post, signed, startTestApi } from './helpers/api';
import { waitFor } from './helpers/callbacks';
import { freePort } from './helpers/free-port';
import { openCashier } from './helpers/cashier';
import { createSellOrder, entriesOf, orderClose, refundCreate, refundRow } from './helpers/money-out';
import { createOrder, eventsOf, orderRow, sql } from './helpers/orders';

const MCHID = '1900000109';
const APPID = 'wxd678efh567hg6787';
const SERIAL = '3775B6A45ACD588826D15E583A95F5DD2D5F7771';

describe('wechatpay adapter (API v3) against a fake WeChat Pay gateway (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let wechat: FakeWechatpayGateway;
  let merchant: Credentials;
  let channel: number;
  /** The same account, configured without the platform certificates. */
  let keyOnlyChannel: number;
  const merchantKey = rsaKeyPair();
  const apiV3Key = randomBytes(16).toString('hex');
  let config: Record<string, unknown>;

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
    api = await startTestApi({ CHANNEL_ALLOW_HTTP: 'true', PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
    await api.app.listen(port, '127.0.0.1');
    wechat = await new FakeWechatpayGateway(MCHID, APPID, SERIAL, merchantKey.publicKey, apiV3Key).start();
    merchant = await api.operator.merchants.create({ name: '微信 shop' });
    config = {
      mchid: MCHID,
      appid: APPID,
      merchant_serial_no: SERIAL,
      private_key: merchantKey.privateKey,
      apiv3_key: apiV3Key,
      platform_public_key: wechat.platform.publicKey,
      platform_public_key_id: wechat.publicKeyId,
      platform_certificates: { [wechat.certificate.serial]: wechat.certificate.certificate },
      gateway: wechat.url,
    };
    const create = async (c: Record<string, unknown>): Promise<number> => {
      const { id } = await api.operator.channels.create({
        category: 'processor',
        name: 'WeChat Pay',
        payMethod: 'wxpay',
        adapter: 'wechatpay',
        rate: '0.006',
        config: JSON.stringify(c),
      });
      await api.operator.channels.link(merchant.id, id);
      return id;
    };
    channel = await create(config);
    const { platform_certificates: _certificates, ...keyOnly } = config;
    keyOnlyChannel = await create(keyOnly);
  });
  afterAll(async () => {
    await api.close();
    await wechat.stop();
  });
  afterEach(() => {
    wechat.api = 'normal';
    wechat.signWith = 'public-key';
    wechat.refundState = 'SUCCESS';
    api.app.get(ChannelAdapters).timeoutMs = 8000;
    expect(wechat.rejected).toEqual([]);
  });

  const notifyUrl = (id = channel): string => `${api.config.publicBaseUrl}/api/channel/notify/${id}`;
  const lifecycle = (): OrderLifecycle => api.app.get(OrderLifecycle);

  /** createOrder, then the payer opens pay_url on a computer: the cashier asks WeChat for the Native trade and shows its QR code. */
  async function newOrder(amount: string, channelId = channel): Promise<{ orderNo: string; id: string; payUrl: string; cashier: string }> {
    const res = await createOrder(api.app, merchant, { cny_amount: amount, paychannel_id: channelId, paychannel_paymethod: 'wxpay' });
    expect(res.body.code).toBe(1);
    const { cashier } = await openCashier(res.body.data.pay_url!);
    return { orderNo: res.body.data.order_no, id: (await orderRow(api.app, res.body.data.order_no)).id as string, payUrl: res.body.data.pay_url!, cashier };
  }

  const page = (payUrl: string, headers: Record<string, string> = {}) => {
    const url = new URL(payUrl);
    return api.app.inject({ method: 'GET', url: `${url.pathname}${url.search}`, headers });
  };

  async function completed(amount: string): Promise<{ orderNo: string; id: string }> {
    const order = await newOrder(amount);
    const delivery = wechat.pay(order.orderNo)!;
    await waitFor(() => delivery.answers[0], 10_000, 'the notification answered');
    expect((await orderRow(api.app, order.orderNo)).status).toBe('completed');
    return order;
  }

  it('native pay -> QR page -> the payer pays -> encrypted notification -> paid -> completed in its transaction, credited once', async () => {
    const before = await api.operator.ledger.balance(merchant.id);
    const order = await newOrder('12.34');
    const native = wechat.calls.find((c) => c.path === '/v3/pay/transactions/native' && c.body?.out_trade_no === order.orderNo)!;
    const expiresAt = (await orderRow(api.app, order.orderNo)).expires_at as Date;
    expect(native.body).toEqual({
      appid: APPID,
      mchid: MCHID,
      description: `Order ${order.orderNo}`,
      out_trade_no: order.orderNo,
      time_expire: `${new Date(expiresAt.getTime() + 8 * 3600_000).toISOString().slice(0, 19)}+08:00`,
      notify_url: notifyUrl(),
      amount: { total: 1234, currency: 'CNY' },
    });
    expect(order.payUrl).toMatch(new RegExp(`^${api.config.publicBaseUrl}/pay/${order.orderNo}\\?token=`));

    const shown = await page(order.payUrl, { 'accept-language': 'zh-CN,zh;q=0.9' });
    expect(shown.statusCode).toBe(200);
    expect(shown.headers['x-frame-options']).toBe('DENY');
    expect(shown.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(shown.body).toContain('<svg');
    expect(shown.body).toContain('扫一扫');
    expect(shown.body).toContain('http-equiv="refresh"');
    // The page shown again uses the same Native trade: WeChat was asked once.
    expect(wechat.calls.filter((c) => c.path === '/v3/pay/transactions/native' && c.body?.out_trade_no === order.orderNo)).toHaveLength(1);
    const trade = wechat.trades.get(order.orderNo)!;
    expect(order.payUrl).not.toContain(encodeURIComponent(trade.codeUrl));

    const paid = await fetch(`${wechat.url}/fake/scan-and-pay`, { method: 'POST', body: new URLSearchParams({ code_url: trade.codeUrl }) });
    expect(paid.status).toBe(200);
    const delivery = wechat.deliveries.at(-1)!;
    await waitFor(() => delivery.answers[0], 10_000, 'the notification answered');
    expect(delivery.answers).toEqual([{ status: 204, body: '' }]);
    // Signed by WeChat Pay's platform key, the notification is its final word (SPEC 5): settled at once, no query.
    expect(await orderRow(api.app, order.orderNo)).toMatchObject({ status: 'completed', channel_trade_no: trade.transactionId });
    expect(wechat.calls.filter((c) => c.path.startsWith(`/v3/pay/transactions/out-trade-no/${order.orderNo}?`))).toHaveLength(0);
    expect((await eventsOf(api.app, order.orderNo)).map((e) => [e.type, e.deliveries])).toEqual([
      ['order.paid', 1],
      ['order.completed', 1],
    ]);
    expect((await api.operator.ledger.balance(merchant.id)).available_fen - before.available_fen).toBe(1234 - 7);

    const after = await page(order.payUrl, { 'accept-language': 'en-US' });
    expect(after.body).toContain('Payment succeeded');
    expect(after.body).not.toContain('<svg');
    expect(after.body).not.toContain('http-equiv="refresh"');
  });

  it("the pay page: 404 without the token or with another order's; both languages; no config value", async () => {
    const a = await newOrder('1.00');
    const b = await newOrder('1.00');
    const token = new URL(a.payUrl).searchParams.get('token')!;
    expect((await page(`${api.config.publicBaseUrl}/pay/${a.orderNo}`)).statusCode).toBe(404);
    const foreign = await page(`${api.config.publicBaseUrl}/pay/${b.orderNo}?token=${encodeURIComponent(token)}`);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.headers['x-frame-options']).toBe('DENY');
    const en = await page(`${a.payUrl}&lang=en`);
    expect(en.body).toContain('and scan this code');
    const zh = await page(a.payUrl, { 'accept-language': 'zh-CN,zh;q=0.9' });
    expect(zh.body).toContain('请打开手机微信');
    for (const body of [en.body, zh.body]) {
      for (const value of [apiV3Key, MCHID, SERIAL, wechat.url, ...merchantKey.privateKey.split('\n').filter((l) => l.length > 20)])
        expect(body).not.toContain(value);
    }
  });

  it('a duplicate or replayed notification is answered 204 and credits once', async () => {
    const order = await newOrder('5.00');
    wechat.pay(order.orderNo, { notify: 'twice' });
    const [first, second] = wechat.deliveries.slice(-2);
    await waitFor(() => first.answers[0] && second.answers[0], 10_000, 'both answered');
    expect([first.answers[0].status, second.answers[0].status]).toEqual([204, 204]);
    await lifecycle().confirm(order.id);
    expect((await wechat.post(notifyUrl(), first.notification)).status).toBe(204);
    expect((await entriesOf(api.app, order.orderNo)).filter((e) => e.kind === 'order_credit')).toHaveLength(1);
    expect((await eventsOf(api.app, order.orderNo)).map((e) => e.type)).toEqual(['order.paid', 'order.completed']);
  });

  it('tampered, unsigned, wrongly keyed, stale (> 5 min), undecryptable and other-mchid/appid notifications change nothing: 4xx {"code":"FAIL"}', async () => {
    const order = await newOrder('7.00');
    wechat.trades.get(order.orderNo)!.state = 'SUCCESS';
    const resource = (overrides: Record<string, unknown> = {}) => ({
      appid: APPID,
      mchid: MCHID,
      out_trade_no: order.orderNo,
      transaction_id: '4200000000000000000000000001',
      trade_state: 'SUCCESS',
      amount: { total: 700, payer_total: 700, currency: 'CNY' },
      ...overrides,
    });
    const genuine = wechat.notification('TRANSACTION.SUCCESS', 'transaction', resource());
    const { 'wechatpay-signature': _s, ...unsignedHeaders } = genuine.headers;
    const cases: Record<string, WechatNotification> = {
      tampered: { ...genuine, body: genuine.body.replace('"支付成功"', '"ok"') },
      unsigned: { ...genuine, headers: unsignedHeaders },
      'wrong key': wechat.notification('TRANSACTION.SUCCESS', 'transaction', resource(), { signer: 'forged' }),
      stale: wechat.notification('TRANSACTION.SUCCESS', 'transaction', resource(), { timestamp: Math.floor(Date.now() / 1000) - 301 }),
      'wrong APIv3 key': wechat.notification('TRANSACTION.SUCCESS', 'transaction', resource(), { apiV3Key: randomBytes(16).toString('hex') }),
      'other mchid': wechat.notification('TRANSACTION.SUCCESS', 'transaction', resource({ mchid: '1900000999' })),
      'other appid': wechat.notification('TRANSACTION.SUCCESS', 'transaction', resource({ appid: 'wx0000000000000000' })),
      'not paid': wechat.notification('TRANSACTION.SUCCESS', 'transaction', resource({ trade_state: 'NOTPAY' })),
      // WeChat's signature probe (签名探测): a merchant that accepts it does not verify signatures.
      'WECHATPAY/SIGNTEST probe': wechat.notification('TRANSACTION.SUCCESS', 'transaction', resource(), { signer: 'probe' }),
    };
    for (const [name, notification] of Object.entries(cases)) {
      const answer = await wechat.post(notifyUrl(), notification);
      expect([name, answer.status >= 400, JSON.parse(answer.body).code]).toEqual([name, true, 'FAIL']);
      expect(answer.body).not.toContain(apiV3Key);
    }
    expect((await orderRow(api.app, order.orderNo)).status).toBe('pending');
    expect(await eventsOf(api.app, order.orderNo)).toEqual([]);
    // The genuine one still works: nothing above consumed it.
    expect((await wechat.post(notifyUrl(), genuine)).status).toBe(204);
  });

  it('verifies with the platform certificate named by Wechatpay-Serial while a merchant switches; a channel without it refuses', async () => {
    wechat.signWith = 'certificate';
    const order = await newOrder('3.00');
    const delivery = wechat.pay(order.orderNo)!;
    await waitFor(() => delivery.answers[0], 10_000, 'answered');
    expect(delivery.answers[0].status).toBe(204);
    expect((await orderRow(api.app, order.orderNo)).status).toBe('completed');

    // Configured with the public key only: an answer or a notification signed by the certificate is not trusted.
    const refused = await createOrder(api.app, merchant, { cny_amount: '3.00', paychannel_id: keyOnlyChannel, paychannel_paymethod: 'wxpay' });
    const cashier = await page(refused.body.data.pay_url!);
    expect([cashier.statusCode, cashier.body.includes('did not answer')]).toEqual([502, true]);
    wechat.signWith = 'public-key';
    const keyOnly = await newOrder('3.00', keyOnlyChannel);
    wechat.signWith = 'certificate';
    const notification = wechat.notification('TRANSACTION.SUCCESS', 'transaction', {
      appid: APPID,
      mchid: MCHID,
      out_trade_no: keyOnly.orderNo,
      transaction_id: '4200000000000000000000000002',
      trade_state: 'SUCCESS',
      amount: { total: 300, payer_total: 300, currency: 'CNY' },
    });
    expect((await wechat.post(notifyUrl(keyOnlyChannel), notification)).status).toBe(401);
    expect((await orderRow(api.app, keyOnly.orderNo)).status).toBe('pending');
  });

  it('a verified notification with another amount is recorded as payment.amount_mismatch and changes nothing', async () => {
    const order = await newOrder('8.00');
    const delivery = wechat.pay(order.orderNo, { total: 80 })!;
    await waitFor(() => delivery.answers[0], 10_000, 'answered');
    expect(delivery.answers[0].status).toBe(400);
    expect((await orderRow(api.app, order.orderNo)).status).toBe('pending');
    const [event] = await eventsOf(api.app, order.orderNo);
    expect(event.type).toBe('payment.amount_mismatch');
  });

  it('the gateway answering 5xx, unsigned, wrongly signed or not at all when the cashier asks for the trade: the payer is told, the order stays payable', async () => {
    api.app.get(ChannelAdapters).timeoutMs = 500;
    const res = await createOrder(api.app, merchant, { cny_amount: '9.00', paychannel_id: channel, paychannel_paymethod: 'wxpay' });
    expect(res.body.code).toBe(1);
    for (const behaviour of ['http-500', 'unsigned', 'bad-signature', 'hang'] as const) {
      wechat.api = behaviour;
      const shown = await page(res.body.data.pay_url!);
      expect([behaviour, shown.statusCode, shown.body.includes('WeChat Pay did not answer'), shown.body.includes('<svg')]).toEqual([
        behaviour,
        502,
        true,
        false,
      ]);
      expect(shown.body).not.toContain(apiV3Key);
    }
    wechat.api = 'normal';
    expect((await orderRow(api.app, res.body.data.order_no)).status).toBe('pending');
    const shown = await page(res.body.data.pay_url!);
    expect([shown.statusCode, shown.body.includes('<svg')]).toEqual([200, true]);
  });

  it('a payment whose notification never came is found by the lost-notification query (1 min), once', async () => {
    const loop = new LostNotificationLoop(api.app.get(LostNotificationRepository), api.app.get(ChannelRepository), api.app.get(ChannelAdapters), lifecycle());
    const order = await newOrder('2.00');
    wechat.pay(order.orderNo, { notify: 'never' });
    const queries = (): number =>
      wechat.calls.filter((c) => c.method === 'GET' && c.path.startsWith(`/v3/pay/transactions/out-trade-no/${order.orderNo}?`)).length;
    await loop.pass();
    expect(queries()).toBe(0);
    await sql(api.app).query(`UPDATE "orders" SET "created_at" = "created_at" - interval '61 seconds' WHERE "order_no" = $1`, [order.orderNo]);
    await loop.pass();
    await loop.pass();
    expect(queries()).toBe(1);
    // WeChat Pay's signed query answer is as final as its notification: settled at once.
    expect(await orderRow(api.app, order.orderNo)).toMatchObject({ status: 'completed', channel_trade_no: wechat.trades.get(order.orderNo)!.transactionId });
  });

  it('orderClose closes the payment at WeChat Pay', async () => {
    const order = await newOrder('3.00');
    const closed = await orderClose(api.app, merchant, order.orderNo);
    expect([closed.body.code, closed.body.data.status]).toEqual([1, 'cancelled']);
    expect(wechat.trades.get(order.orderNo)!.state).toBe('CLOSED');
    expect(wechat.calls.at(-1)).toMatchObject({ method: 'POST', path: `/v3/pay/transactions/out-trade-no/${order.orderNo}/close`, body: { mchid: MCHID } });
  });

  it('a partial refund settled at once, then a full one settled later by its REFUND.SUCCESS notification', async () => {
    const order = await completed('10.00');
    const refunds = api.app.get(RefundLifecycle);
    const first = await refundCreate(api.app, merchant, { order_no: order.orderNo, refund_amount: '3.00', merchant_refund_no: `wx-r-${order.orderNo}-1` });
    await refunds.process((await refundRow(api.app, first.body.data.refund_no)).id as string);
    expect((await refundRow(api.app, first.body.data.refund_no)).status).toBe('succeeded');
    const refundCall = wechat.calls.find((c) => c.path === '/v3/refund/domestic/refunds')!;
    expect(refundCall.body).toEqual({
      out_trade_no: order.orderNo,
      out_refund_no: first.body.data.refund_no,
      notify_url: notifyUrl(),
      amount: { refund: 300, total: 1000, currency: 'CNY' },
    });

    wechat.refundState = 'PROCESSING';
    const second = await refundCreate(api.app, merchant, { order_no: order.orderNo, refund_amount: '7.00', merchant_refund_no: `wx-r-${order.orderNo}-2` });
    const secondId = (await refundRow(api.app, second.body.data.refund_no)).id as string;
    await expect(refunds.process(secondId)).rejects.toThrow(/processing/);
    const delivery = wechat.settleRefund(order.orderNo, second.body.data.refund_no, 'SUCCESS')!;
    await waitFor(() => delivery.answers[0], 10_000, 'the refund notification answered');
    expect(delivery.answers[0].status).toBe(204);
    expect((await refundRow(api.app, second.body.data.refund_no)).status).toBe('succeeded');
    expect((await eventsOf(api.app, order.orderNo)).map((e) => e.type)).toEqual(['order.paid', 'order.completed', 'refund.succeeded', 'refund.succeeded']);
  });

  it('an answer carrying a WECHATPAY/SIGNTEST probe or no signature is not trusted: the outcome is unknown, reported with its code', async () => {
    const order = await completed('4.00');
    await sql(api.app).query(`UPDATE "orders" SET "status" = 'paid' WHERE "id" = $1`, [order.id]);
    wechat.failNext('query', 'probe');
    await expect(lifecycle().confirm(order.id)).rejects.toThrow(/answer signature does not verify/);
    wechat.api = 'unsigned';
    await expect(lifecycle().confirm(order.id)).rejects.toThrow(
      /wechatpay GET \/v3\/pay\/transactions\/out-trade-no\/\d+: wechatpay HTTP 200 .*\(unsigned answer, outcome unknown\)/,
    );
    wechat.api = 'normal';
    // A request WeChat cannot verify is answered 401 SIGN_ERROR, unsigned: reported as such, not as our signature check failing.
    const other = new WechatpayAdapter({ ...(config as object), private_key: rsaKeyPair().privateKey }, () => '', notifyUrl(), null, undefined, true);
    await expect(other.queryPayment({ orderNo: order.orderNo, amountFen: 400, channelTradeNo: null, paidAt: null }, AbortSignal.timeout(5000))).rejects.toThrow(
      /wechatpay HTTP 401 SIGN_ERROR 签名错误 SIGN_ERROR \(unsigned answer, outcome unknown\)/,
    );
    expect(wechat.rejected.splice(0)).toEqual([{ path: expect.stringContaining(order.orderNo), why: 'SIGN_ERROR' }]);
    await lifecycle().confirm(order.id);
    expect((await orderRow(api.app, order.orderNo)).status).toBe('completed');
  });

  it('a verified REFUND.* notification about a refund that is not ours is answered 204 and moves nothing', async () => {
    const order = await completed('4.20');
    const notification = wechat.notification('REFUND.SUCCESS', 'refund', {
      mchid: MCHID,
      out_trade_no: order.orderNo,
      transaction_id: wechat.trades.get(order.orderNo)!.transactionId,
      out_refund_no: 'made-in-the-merchant-platform',
      refund_id: '50300000000000000001',
      refund_status: 'SUCCESS',
      amount: { total: 420, refund: 100, payer_total: 420, payer_refund: 100 },
    });
    expect((await wechat.post(notifyUrl(), notification)).status).toBe(204);
    expect((await eventsOf(api.app, order.orderNo)).map((e) => e.type)).toEqual(['order.paid', 'order.completed']);
  });

  it('sell orders are not offered (40302); getPayChannels shows no config value', async () => {
    const sell = await createSellOrder(api.app, merchant, {
      cny_amount: '1.00',
      paychannel_id: channel,
      payee_name: '张三',
      payee_account: '6222021234567890',
      payee_bank: '工商银行',
    });
    expect(sell.body.code).toBe(40302);
    const channels = await post(api.app, '/api/merchant/getPayChannels', signed(merchant, { category: 'processor' }));
    const text = JSON.stringify([channels.body, sell.body]);
    for (const value of [apiV3Key, MCHID, SERIAL, wechat.url, wechat.publicKeyId]) expect(text).not.toContain(value);
  });

  it('no key or config value in any log line of everything above', () => {
    // The refusals and channel failures above were logged: the check sees the lines that could leak.
    expect(logged.join('\n')).toContain('notification refused');
    const all = logged.join('\n');
    for (const value of [
      apiV3Key,
      ...merchantKey.privateKey.split('\n').filter((l) => l.length > 20),
      ...wechat.platform.publicKey.split('\n').filter((l) => l.length > 20),
    ])
      expect(all).not.toContain(value);
  });
});
