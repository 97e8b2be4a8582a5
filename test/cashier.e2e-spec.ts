import { randomBytes } from 'node:crypto';
import { SecretBox } from '@app/common';
import { OrderLifecycle } from '@app/orders';
import type { Credentials } from '@app/operator';
import { FakeAlipayGateway, rsaKeyPair } from './fakes/alipay-gateway';
import { FakeWechatpayGateway } from './fakes/wechatpay-gateway';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { type Device, USER_AGENTS, payLink } from './helpers/cashier';
import { waitFor } from './helpers/callbacks';
import { freePort } from './helpers/free-port';
import { orderClose } from './helpers/money-out';
import { createOrder, sql } from './helpers/orders';

const APP_ID = '2021004100000001';
const MCHID = '1900000109';
const APPID = 'wxd678efh567hg6787';
const SERIAL = '3775B6A45ACD588826D15E583A95F5DD2D5F7771';

/**
 * The cashier's rules without a browser (SPEC 5, 6): which page each device and order state gets,
 * the prepays kept and used again, one trade type per order at WeChat, the payer's address from
 * the trusted proxy, WeChat's OAuth round, the security headers. The flows in a real browser are
 * cashier-browser.e2e-spec.ts's.
 */
describe('the cashier /pay/{order_no} (real PostgreSQL and Redis, fake gateways)', () => {
  let api: TestApi;
  let alipay: FakeAlipayGateway;
  let wechat: FakeWechatpayGateway;
  let merchant: Credentials;
  let alipayChannel: number;
  let wechatChannel: number;
  let wapOnlyChannel: number;
  const appKeys = rsaKeyPair();
  const merchantKey = rsaKeyPair();
  const apiV3Key = randomBytes(16).toString('hex');
  const appSecret = randomBytes(16).toString('hex');
  let wechatConfig: Record<string, unknown>;

  beforeAll(async () => {
    const port = await freePort();
    // One proxy in front: the payer's address is the one it names in X-Forwarded-For (SPEC 10 TRUST_PROXY).
    api = await startTestApi({ CHANNEL_ALLOW_HTTP: 'true', PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, TRUST_PROXY: '1' });
    await api.app.listen(port, '127.0.0.1');
    alipay = await new FakeAlipayGateway(APP_ID, appKeys.publicKey).start();
    wechat = await new FakeWechatpayGateway(MCHID, APPID, SERIAL, merchantKey.publicKey, apiV3Key).start();
    wechat.appSecret = appSecret;
    merchant = await api.operator.merchants.create({ name: 'Cashier shop' });
    const create = async (adapter: 'alipay' | 'wechatpay', config: Record<string, unknown>): Promise<number> => {
      const { id } = await api.operator.channels.create({
        category: 'processor',
        name: adapter,
        payMethod: adapter === 'alipay' ? 'alipay' : 'wxpay',
        adapter,
        config: JSON.stringify(config),
      });
      await api.operator.channels.link(merchant.id, id);
      return id;
    };
    const alipayConfig = { app_id: APP_ID, private_key: appKeys.privateKey, alipay_public_key: alipay.platform.publicKey, gateway: alipay.gateway };
    alipayChannel = await create('alipay', alipayConfig);
    wapOnlyChannel = await create('alipay', { ...alipayConfig, modes: ['wap'] });
    wechatConfig = {
      mchid: MCHID,
      appid: APPID,
      merchant_serial_no: SERIAL,
      private_key: merchantKey.privateKey,
      apiv3_key: apiV3Key,
      platform_public_key: wechat.platform.publicKey,
      platform_public_key_id: wechat.publicKeyId,
      app_secret: appSecret,
      gateway: wechat.url,
      oauth_gateway: wechat.url,
    };
    wechatChannel = await create('wechatpay', wechatConfig);
  });
  afterAll(async () => {
    await api.close();
    await alipay.stop();
    await wechat.stop();
  });
  afterEach(() => {
    expect(alipay.rejected).toEqual([]);
    expect(wechat.rejected).toEqual([]);
  });

  async function newOrder(channel: number, params: Record<string, unknown> = {}): Promise<{ orderNo: string; path: string }> {
    const res = await createOrder(api.app, merchant, {
      cny_amount: '12.00',
      paychannel_id: channel,
      paychannel_paymethod: channel === wechatChannel ? 'wxpay' : 'alipay',
      ...params,
    });
    expect(res.body.code).toBe(1);
    const url = new URL(res.body.data.pay_url!);
    expect(`${url.origin}${url.pathname}`).toBe(`${api.config.publicBaseUrl}/pay/${res.body.data.order_no}`);
    return { orderNo: res.body.data.order_no, path: `${url.pathname}${url.search}` };
  }

  const open = (path: string, device: Device = 'desktop', headers: Record<string, string> = {}) =>
    api.app.inject({ method: 'GET', url: path, headers: { 'user-agent': USER_AGENTS[device], 'accept-language': 'en', ...headers } });
  const orderCalls = (orderNo: string) => wechat.calls.filter((c) => c.path.startsWith('/v3/pay/transactions/') && c.body?.out_trade_no === orderNo);

  it('answers a page for people: never framed, no referrer, not cached, no script but JSAPI; 404 for a wrong token, another order or a sandbox order', async () => {
    const order = await newOrder(alipayChannel);
    const page = await open(order.path);
    expect(page.statusCode).toBe(200);
    expect(page.headers).toMatchObject({
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'x-frame-options': 'DENY',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    });
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'none'");
    expect(page.body).not.toContain('<script');
    // The page's one <style> carries this answer's nonce.
    const styleNonce = /<style nonce="([0-9a-f]+)">/.exec(page.body)![1];
    expect(csp).toContain(`'nonce-${styleNonce}'`);

    const other = await newOrder(alipayChannel);
    const token = new URL(order.path, 'http://x').searchParams.get('token')!;
    const sandbox = await merchantWithChannels(api.operator);
    const sandboxOrder = await createOrder(api.app, sandbox.merchant, { cny_amount: '1.00', paychannel_id: sandbox.channels.processor });
    for (const path of [
      `/pay/${order.orderNo}`,
      `/pay/${order.orderNo}?token=x`,
      `/pay/${other.orderNo}?token=${encodeURIComponent(token)}`,
      `/pay/${'9'.repeat(22)}?token=${encodeURIComponent(token)}`,
      `/pay/${sandboxOrder.body.data.order_no}?token=${encodeURIComponent(token)}`,
      '/pay/abc',
    ]) {
      const res = await open(path);
      expect([path, res.statusCode, res.headers['x-frame-options'], res.body.includes('This payment link is not valid')]).toEqual([path, 404, 'DENY', true]);
    }
  });

  it('Alipay: subject, return_url and the order expiry go to both website pays, which are one trade at Alipay; quit_url on a phone', async () => {
    const order = await newOrder(alipayChannel, { subject: '会员 30 天', return_url: 'https://shop.example/orders/7' });
    const page = payLink((await open(order.path)).body)!;
    const wap = payLink((await open(order.path, 'phone')).body)!;
    const [pageParams, wapParams] = [page, wap].map((u) => Object.fromEntries(new URL(u).searchParams));
    expect([pageParams.method, wapParams.method]).toEqual(['alipay.trade.page.pay', 'alipay.trade.wap.pay']);
    expect([pageParams.return_url, wapParams.return_url]).toEqual(['https://shop.example/orders/7', 'https://shop.example/orders/7']);
    const [pageBiz, wapBiz] = [pageParams, wapParams].map((p) => JSON.parse(p.biz_content) as Record<string, string>);
    expect(wapBiz).toEqual({ ...pageBiz, product_code: 'QUICK_WAP_WAY', quit_url: 'https://shop.example/orders/7' });
    expect(pageBiz).toMatchObject({ out_trade_no: order.orderNo, subject: '会员 30 天', total_amount: '12.00', product_code: 'FAST_INSTANT_TRADE_PAY' });
    // The payer opens page pay on a computer, then wap pay on a phone: one trade, never TRADE_DATA_MATCH_ERROR.
    expect(await (await fetch(page)).text()).toContain('<button>Pay</button>');
    expect(await (await fetch(wap)).text()).toContain('<button>Pay</button>');
    expect(alipay.trades.get(order.orderNo)).toMatchObject({ method: 'alipay.trade.wap.pay', subject: '会员 30 天' });
  });

  it('WeChat: the Native trade is asked for once and its QR code shown again; description is the subject cut to 127 characters', async () => {
    const order = await newOrder(wechatChannel, { subject: '商'.repeat(128) });
    for (let i = 0; i < 3; i++) expect((await open(order.path)).body).toContain('<svg');
    expect(orderCalls(order.orderNo)).toHaveLength(1);
    expect(orderCalls(order.orderNo)[0].body).toMatchObject({ description: '商'.repeat(127), out_trade_no: order.orderNo });
    // Stored past its use (code_url lasts 2 hours): asked again with the same parameters, the same trade.
    await sql(api.app).query(`UPDATE "order_prepays" SET "valid_until" = now() WHERE "order_id" = (SELECT "id" FROM "orders" WHERE "order_no" = $1)`, [
      order.orderNo,
    ]);
    expect((await open(order.path)).body).toContain('<svg');
    expect(orderCalls(order.orderNo)).toHaveLength(2);
  });

  it("WeChat H5: the payer's address from the trusted proxy; the h5_url used again from that address only, and asked again when stale", async () => {
    const order = await newOrder(wechatChannel, { return_url: 'https://shop.example/orders/8' });
    const from = (ip: string) => open(order.path, 'phone', { 'x-forwarded-for': ip });
    const first = payLink((await from('203.0.113.7')).body)!;
    expect(new URL(first).searchParams.get('redirect_url')).toBe('https://shop.example/orders/8');
    expect(payLink((await from('203.0.113.7')).body)).toBe(first);
    expect(orderCalls(order.orderNo).map((c) => (c.body!.scene_info as { payer_client_ip: string }).payer_client_ip)).toEqual(['203.0.113.7']);
    // Another network: WeChat checks the address, so the h5_url is asked for again (the one parameter that may change).
    await from('198.51.100.20');
    expect(orderCalls(order.orderNo).map((c) => (c.body!.scene_info as { payer_client_ip: string }).payer_client_ip)).toEqual(['203.0.113.7', '198.51.100.20']);
    // h5_url lasts 5 minutes: past that, asked again.
    await sql(api.app).query(
      `UPDATE "order_prepays" SET "valid_until" = now() + interval '10 seconds' WHERE "order_id" = (SELECT "id" FROM "orders" WHERE "order_no" = $1)`,
      [order.orderNo],
    );
    await from('198.51.100.20');
    expect(orderCalls(order.orderNo)).toHaveLength(3);
    expect(wechat.trades.get(order.orderNo)!.tradeType).toBe('MWEB');
  });

  it('one trade type per order at WeChat: a second device, even at the same moment, is told where the payment was started', async () => {
    const order = await newOrder(wechatChannel);
    const [desktop, phone] = await Promise.all([open(order.path, 'desktop'), open(order.path, 'phone')]);
    const started = [desktop, phone].filter((p) => p.body.includes('This payment was started another way'));
    expect(started).toHaveLength(1);
    expect(new Set(orderCalls(order.orderNo).map((c) => c.path)).size).toBe(1);
    const later = await open(order.path, 'wechat');
    // Bound to its trade type before any OAuth round: no redirect, no second trade.
    expect([later.statusCode, later.body.includes('This payment was started another way')]).toEqual([200, true]);
    expect(new Set(orderCalls(order.orderNo).map((c) => c.path)).size).toBe(1);
  });

  it("JSAPI: WeChat's silent OAuth, the openid's own trade, paySign WeChat accepts, the script under the answer's nonce; another payer, a reload, a snapshot visitor", async () => {
    const order = await newOrder(wechatChannel);
    const start = await open(order.path, 'wechat');
    expect(start.statusCode).toBe(302);
    const authorize = new URL(start.headers.location as string);
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${wechat.url}/connect/oauth2/authorize`);
    expect(Object.fromEntries(authorize.searchParams)).toEqual({
      appid: APPID,
      redirect_uri: `${api.config.publicBaseUrl}${order.path}&lang=en`,
      response_type: 'code',
      scope: 'snsapi_base',
      state: 'pay',
    });
    expect(authorize.hash).toBe('#wechat_redirect');
    /** WeChat's authorize page for the current payer: where it sends the browser back. */
    const authorized = async (url: string): Promise<string> => {
      const back = new URL((await fetch(url, { redirect: 'manual' })).headers.get('location')!);
      return `${back.pathname}${back.search}`;
    };
    const returned = await authorized(authorize.toString());
    const page = await open(returned, 'wechat');
    expect(page.statusCode).toBe(200);
    const nonce = /<script nonce="([0-9a-f]{32})">/.exec(page.body)![1];
    expect(String(page.headers['content-security-policy'])).toContain(`script-src 'nonce-${nonce}'`);
    const request = JSON.parse(/var request=(\{[^}]+\})/.exec(page.body)![1]) as Record<string, string>;
    expect(orderCalls(order.orderNo)[0].body).toMatchObject({ payer: { openid: wechat.oauthOpenid } });
    // What the page hands WeixinJSBridge is what WeChat accepts for this payer (paySign checked by wechatpay-axios-plugin).
    expect(wechat.jsapiPay(request, 'o-someone-else', { cancel: true })).toBe('get_brand_wcpay_request:fail');
    expect(wechat.payerRefusals.splice(0)).toEqual([{ where: 'jsapi', why: 'openid' }]);
    expect(wechat.jsapiPay({ ...request, paySign: request.paySign.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')) }, wechat.oauthOpenid)).toBe(
      'get_brand_wcpay_request:fail',
    );
    expect(wechat.payerRefusals.splice(0)).toEqual([{ where: 'jsapi', why: 'paySign' }]);

    // A reload brings back a used code: WeChat refuses it (40163) and the payer goes round OAuth again, silently.
    const reload = await open(returned, 'wechat');
    expect([reload.statusCode, new URL(reload.headers.location as string).searchParams.get('state')]).toEqual([302, 'pay']);
    expect((await open(await authorized(reload.headers.location as string), 'wechat')).body).toContain('getBrandWCPayRequest');
    // The same payer again: the prepay_id kept, WeChat not asked twice.
    expect(orderCalls(order.orderNo)).toHaveLength(1);

    // Another WeChat user with the link: the trade is the first payer's.
    const first = wechat.oauthOpenid;
    wechat.oauthOpenid = 'o-another-payer-000000000000';
    const otherPayer = await open(await authorized((await open(order.path, 'wechat')).headers.location as string), 'wechat');
    expect(otherPayer.body).toContain('Another WeChat account is paying this order');
    expect(otherPayer.body).not.toContain('<script');
    wechat.oauthOpenid = first;

    // WeChat's snapshot page (is_snapshotuser): a virtual account that cannot pay.
    const snapshotOrder = await newOrder(wechatChannel);
    wechat.snapshotUser = true;
    try {
      const snapshot = await open(await authorized((await open(snapshotOrder.path, 'wechat')).headers.location as string), 'wechat');
      expect(snapshot.body).toContain('Use full service');
      expect(orderCalls(snapshotOrder.orderNo)).toHaveLength(0);
    } finally {
      wechat.snapshotUser = false;
    }

    expect(wechat.jsapiPay(request, wechat.oauthOpenid)).toBe('get_brand_wcpay_request:ok');
  });

  it('JSAPI when OAuth refuses (a wrong AppSecret): the payer goes round once more, then is told', async () => {
    const { id } = await api.operator.channels.create({
      category: 'processor',
      name: 'wrong secret',
      payMethod: 'wxpay',
      adapter: 'wechatpay',
      config: JSON.stringify({ ...wechatConfig, app_secret: 'f'.repeat(32) }),
    });
    await api.operator.channels.link(merchant.id, id);
    const res = await createOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: id, paychannel_paymethod: 'wxpay' });
    const url = new URL(res.body.data.pay_url!);
    const authorized = async (location: string): Promise<string> => {
      const back = new URL((await fetch(location, { redirect: 'manual' })).headers.get('location')!);
      return `${back.pathname}${back.search}`;
    };
    const once = await open(await authorized((await open(`${url.pathname}${url.search}`, 'wechat')).headers.location as string), 'wechat');
    expect([once.statusCode, new URL(once.headers.location as string).searchParams.get('state')]).toEqual([302, 'again']);
    const twice = await open(await authorized(once.headers.location as string), 'wechat');
    expect([twice.statusCode, twice.body.includes('WeChat Pay did not answer')]).toEqual([502, true]);
    expect(twice.body).not.toContain('f'.repeat(32));
  });

  it('a mode the channel does not allow: a computer is shown a QR code of the page to take it to a phone', async () => {
    const order = await newOrder(wapOnlyChannel);
    const desktop = await open(order.path);
    expect(desktop.body).toContain('Alipay cannot be used on a computer for this order.');
    expect(desktop.body).toContain('Open this page in your phone’s browser');
    expect(desktop.body).toContain('aria-label="QR code of this page"');
    expect(payLink(desktop.body)).toBeNull();
    expect(payLink((await open(order.path, 'phone')).body)).toContain('alipay.trade.wap.pay');
  });

  it('follows the order: paid and closed show the way back to return_url, the waiting screen reloads, an expired order says so', async () => {
    const paid = await newOrder(alipayChannel, { return_url: 'https://shop.example/orders/9' });
    await fetch(payLink((await open(paid.path)).body)!);
    const delivery = alipay.pay(paid.orderNo);
    await waitFor(() => delivery.answers[0], 10_000, 'the notification answered');
    const wait = await open(`${paid.path}&step=wait`);
    expect(wait.body).toContain('Payment succeeded');
    expect(wait.body).toContain('<a class="button done" href="https://shop.example/orders/9">Back to Cashier shop</a>');
    expect(wait.body).not.toContain('http-equiv="refresh"');

    const pending = await newOrder(alipayChannel);
    const waiting = await open(`${pending.path}&step=wait`);
    expect(waiting.body).toContain('Checking your payment');
    expect(waiting.body).toContain('<meta http-equiv="refresh" content="3">');
    // No return_url: nothing to go back to but the page itself.
    expect(waiting.body).not.toContain('Cancel and go back');

    const closed = await newOrder(alipayChannel, { return_url: 'https://shop.example/orders/10' });
    expect((await orderClose(api.app, merchant, closed.orderNo)).body.code).toBe(1);
    const closedPage = await open(closed.path, 'phone', { 'accept-language': 'zh-CN' });
    expect(closedPage.body).toContain('此订单已关闭');
    expect(closedPage.body).toContain('此订单未付款，现已无法付款。');
    expect(closedPage.body).toContain('href="https://shop.example/orders/10">返回Cashier shop</a>');
    // Said in the payer's words (issue 38): not "Pay Cashier shop", nothing to pay, nothing that was never paid called done.
    const closedEn = await open(closed.path);
    expect(closedEn.body).toContain('<title>This order is closed · Cashier shop</title>');
    expect(closedEn.body).toContain('It was not paid, and it can no longer be paid.');
    expect(closedEn.body).not.toMatch(/Pay Cashier shop|cancelled|nothing left/i);

    const expired = await newOrder(wechatChannel);
    await sql(api.app).query(`UPDATE "orders" SET "expires_at" = now() - interval '1 second' WHERE "order_no" = $1`, [expired.orderNo]);
    expect((await open(expired.path)).body).toContain('The time to pay has run out');
    expect(orderCalls(expired.orderNo)).toHaveLength(0);
    // Once the expiry pass has cancelled it, the page still says why.
    await api.app.get(OrderLifecycle).expireOverdue();
    const cancelled = await open(expired.path, 'desktop', { 'accept-language': 'zh-CN' });
    expect(cancelled.body).toContain('付款时间已过');
    expect(cancelled.body).toContain('<title>付款时间已过 · Cashier shop</title>');
  });

  it("a pay_url from before the cashier (/pay/wechat/...): its Native trade becomes the order's prepay and the payer goes on to the cashier", async () => {
    const order = await newOrder(wechatChannel);
    const codeUrl = 'weixin://wxpay/bizpayurl?pr=legacy0';
    const legacy = api.app.get(SecretBox).seal(codeUrl, `wechatpay-page:${order.orderNo}`);
    const moved = await open(`/pay/wechat/${order.orderNo}?token=${encodeURIComponent(legacy)}`);
    expect(moved.statusCode).toBe(303);
    const cashier = await open(moved.headers.location as string);
    expect(cashier.body).toContain('<svg');
    expect(orderCalls(order.orderNo)).toHaveLength(0);
    expect((await open(`/pay/wechat/${order.orderNo}?token=nope`)).statusCode).toBe(404);
  });
});
