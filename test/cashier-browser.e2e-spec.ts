import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplicationContext } from '@nestjs/common';
import { type Browser, type BrowserContext, type Page, chromium } from 'playwright-core';
import qrcode from 'qrcode-generator';
import type { Credentials } from '@app/operator';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { FakeAlipayGateway, rsaKeyPair } from './fakes/alipay-gateway';
import { FakeWechatpayGateway } from './fakes/wechatpay-gateway';
import { type TestApi, startTestApi } from './helpers/api';
import { CallbackReceiver, waitFor } from './helpers/callbacks';
import { type Device, USER_AGENTS } from './helpers/cashier';
import { freePort } from './helpers/free-port';
import { orderClose } from './helpers/money-out';
import { createOrder, orderRow, sql } from './helpers/orders';

const CHROMIUM = '/usr/bin/chromium';
const WIDTHS = { desktop: 1280, phone: 390 } as const;
const APP_ID = '2021004100000001';
const MCHID = '1900000109';
const APPID = 'wxd678efh567hg6787';
const SERIAL = '3775B6A45ACD588826D15E583A95F5DD2D5F7771';

/**
 * The cashier (SPEC 6) in a real browser, Debian's Chromium driven by playwright-core: from one
 * pay_url, a computer, a phone browser and the provider's own app each go down the flow they can
 * finish, pay at the fakes, and the merchant gets order.paid and order.completed; the return takes
 * the payer to return_url. Screenshots of every screen in both languages, at 390 px and desktop,
 * under the test's temp folder.
 */
describe('the cashier in a browser: every device pays from one pay_url', () => {
  jest.setTimeout(240_000);
  let api: TestApi;
  let worker: INestApplicationContext;
  let receiver: CallbackReceiver;
  let shop: Server;
  let shopUrl: string;
  let alipay: FakeAlipayGateway;
  let wechat: FakeWechatpayGateway;
  let merchant: Credentials;
  let alipayChannel: number;
  let wechatChannel: number;
  /** A WeChat Pay channel whose merchant has no H5 (modes native and jsapi). */
  let noH5Channel: number;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const appKeys = rsaKeyPair();
  const merchantKey = rsaKeyPair();
  const apiV3Key = randomBytes(16).toString('hex');
  const appSecret = randomBytes(16).toString('hex');
  const shots = mkdtempSync(join(tmpdir(), 'cashier-screens-'));
  /** What the stubbed WeixinJSBridge does with getBrandWCPayRequest: the payer confirms, or closes the window. */
  let bridge: 'pay' | 'cancel' = 'pay';
  let bridgeCalls = 0;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium fonts-noto-cjk (.ci/run does)`);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    receiver = await CallbackReceiver.start();
    api = await startTestApi({ PUBLIC_BASE_URL: base, CHANNEL_ALLOW_HTTP: 'true', CALLBACK_ALLOW_PRIVATE: 'true' });
    await api.app.listen({ port, host: '127.0.0.1' });
    worker = await createWorkerApp(api.config, { shutdownHooks: false });
    // The shop the payer comes back to: any page of it says where the payer landed.
    shop = createServer((req, res) =>
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<h1 id="shop">Back at the shop: ${req.url}</h1>`),
    );
    await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
    shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;

    alipay = await new FakeAlipayGateway(APP_ID, appKeys.publicKey).start();
    wechat = await new FakeWechatpayGateway(MCHID, APPID, SERIAL, merchantKey.publicKey, apiV3Key).start();
    // What the merchant registered at WeChat Pay: the H5 domain (the cashier's), the AppSecret for OAuth.
    wechat.h5Origin = base;
    wechat.appSecret = appSecret;
    merchant = await api.operator.merchants.create({ name: '山河书店 Hills Books', notifyUrl: receiver.url });
    const create = async (adapter: 'alipay' | 'wechatpay', config: Record<string, unknown>): Promise<number> => {
      const { id } = await api.operator.channels.create({
        category: 'processor',
        name: adapter,
        payMethod: adapter === 'alipay' ? 'alipay' : 'wxpay',
        adapter,
        rate: '0.006',
        config: JSON.stringify(config),
      });
      await api.operator.channels.link(merchant.id, id);
      return id;
    };
    alipayChannel = await create('alipay', {
      app_id: APP_ID,
      private_key: appKeys.privateKey,
      alipay_public_key: alipay.platform.publicKey,
      gateway: alipay.gateway,
    });
    const wechatConfig = {
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
    noH5Channel = await create('wechatpay', { ...wechatConfig, modes: ['native', 'jsapi'] });

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => undefined);
    await browser?.close();
    await worker?.close();
    await api?.close();
    await alipay?.stop();
    await wechat?.stop();
    await receiver?.close();
    await new Promise((resolve) => shop?.close(resolve));
    process.stdout.write(`cashier screenshots: ${shots}\n`);
  });

  afterEach(() => {
    expect(alipay.rejected).toEqual([]);
    expect(wechat.rejected).toEqual([]);
  });

  /**
   * A browser as the payer's device: a computer; a phone (390 px, touch, a phone's user agent); the
   * Alipay app or WeChat on that phone (their user agents; WeChat's page gets WeixinJSBridge, whose
   * getBrandWCPayRequest the fake answers as WeChat would).
   */
  async function device(kind: Device, locale = 'en-US'): Promise<Page> {
    const phone = kind !== 'desktop';
    const context = await browser.newContext({
      userAgent: USER_AGENTS[kind],
      viewport: phone ? { width: WIDTHS.phone, height: 844 } : { width: WIDTHS.desktop, height: 900 },
      isMobile: phone,
      hasTouch: phone,
      locale,
    });
    contexts.push(context);
    if (kind === 'wechat') {
      await context.exposeFunction('fakeWechatBridge', (request: Record<string, unknown>) => {
        bridgeCalls++;
        return wechat.jsapiPay(request, wechat.oauthOpenid, { cancel: bridge === 'cancel' });
      });
      // WeChat's in-app browser has WeixinJSBridge: stubbed, it hands getBrandWCPayRequest's argument to the fake.
      await context.addInitScript({
        content: `window.WeixinJSBridge = { invoke: function (name, request, callback) {
          if (name === 'getBrandWCPayRequest') window.fakeWechatBridge(request).then(function (errMsg) { callback({ err_msg: errMsg }); });
        } };`,
      });
    }
    return context.newPage();
  }

  /** The page as it is now, in both languages, at desktop width and at 390 px, full length. */
  async function shoot(page: Page, name: string): Promise<void> {
    const at = page.url();
    mkdirSync(shots, { recursive: true });
    for (const lang of ['zh-CN', 'en'] as const) {
      const url = new URL(at);
      url.searchParams.set('lang', lang);
      await page.goto(url.toString());
      for (const [width, px] of Object.entries(WIDTHS)) {
        await page.setViewportSize({ width: px, height: 900 });
        await page.screenshot({ path: join(shots, `${name}-${lang}-${width}.png`), fullPage: true });
      }
    }
    await page.goto(at);
  }

  async function newOrder(channel: number, method: 'alipay' | 'wxpay', amount: string): Promise<{ orderNo: string; payUrl: string; returnUrl: string }> {
    const merchantOrderNo = `HB-${randomBytes(4).toString('hex')}`;
    const returnUrl = `${shopUrl}/orders/${merchantOrderNo}`;
    const res = await createOrder(api.app, merchant, {
      cny_amount: amount,
      paychannel_id: channel,
      paychannel_paymethod: method,
      merchant_order_no: merchantOrderNo,
      subject: '《山河岁月》精装版 · Hills and Rivers, hardcover',
      return_url: returnUrl,
    });
    expect(res.body.code).toBe(1);
    return { orderNo: res.body.data.order_no, payUrl: res.body.data.pay_url!, returnUrl };
  }

  /** The merchant got order.paid, then order.completed, for the order. */
  async function merchantNotified(orderNo: string): Promise<void> {
    await waitFor(
      () => {
        const events = receiver.received.filter((c) => c.body.order_no === orderNo).map((c) => c.body.event);
        return events.includes('order.paid') && events.includes('order.completed');
      },
      60_000,
      `order.paid and order.completed delivered for ${orderNo}`,
    );
    expect((await orderRow(api.app, orderNo)).status).toBe('completed');
  }

  /** The cashier's summary: merchant, amount, subject, the shop's order number, the time left. */
  async function expectSummary(page: Page, amount: string): Promise<void> {
    expect(await page.locator('h1.merchant').innerText()).toBe('山河书店 Hills Books');
    expect(await page.locator('.amount').innerText()).toBe(`¥${amount}`);
    expect(await page.locator('.subject').innerText()).toBe('《山河岁月》精装版 · Hills and Rivers, hardcover');
    expect(await page.locator('dd').first().innerText()).toMatch(/^HB-[0-9a-f]{8}$/);
    expect(await page.locator('dd').nth(1).innerText()).toMatch(/Beijing time, (29|30) min left$/);
  }

  it('Alipay on a computer: page pay, Alipay returns the payer to the shop', async () => {
    const order = await newOrder(alipayChannel, 'alipay', '128.00');
    const page = await device('desktop');
    await page.goto(order.payUrl);
    await expectSummary(page, '128.00');
    await shoot(page, 'alipay-page');
    const link = page.getByRole('link', { name: 'Pay with Alipay' });
    expect(new URL((await link.getAttribute('href'))!).searchParams.get('method')).toBe('alipay.trade.page.pay');
    await link.click();
    await page.getByText('支付宝 收银台').waitFor();
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.waitForURL((url) => url.href.startsWith(order.returnUrl));
    expect(await page.locator('#shop').innerText()).toContain(new URL(order.returnUrl).pathname);
    await merchantNotified(order.orderNo);
  });

  it('Alipay in a phone browser: wap pay, whose page also leads back to the shop', async () => {
    const order = await newOrder(alipayChannel, 'alipay', '36.50');
    const page = await device('phone', 'zh-CN');
    await page.goto(order.payUrl);
    expect(await page.getAttribute('html', 'lang')).toBe('zh-CN');
    const link = page.getByRole('link', { name: '使用支付宝支付' });
    const params = new URL((await link.getAttribute('href'))!).searchParams;
    expect(params.get('method')).toBe('alipay.trade.wap.pay');
    expect(JSON.parse(params.get('biz_content')!)).toMatchObject({ product_code: 'QUICK_WAP_WAY', quit_url: order.returnUrl });
    await shoot(page, 'alipay-wap');
    await link.click();
    await page.getByText('手机网站支付').waitFor();
    expect(await page.locator('#quit').getAttribute('href')).toBe(order.returnUrl);
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.waitForURL((url) => url.href.startsWith(order.returnUrl));
    await merchantNotified(order.orderNo);
  });

  it('Alipay inside the Alipay app: wap pay', async () => {
    const order = await newOrder(alipayChannel, 'alipay', '9.90');
    const page = await device('alipay');
    await page.goto(order.payUrl);
    const link = page.getByRole('link', { name: 'Pay with Alipay' });
    expect(new URL((await link.getAttribute('href'))!).searchParams.get('method')).toBe('alipay.trade.wap.pay');
    await link.click();
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.waitForURL((url) => url.href.startsWith(order.returnUrl));
    await merchantNotified(order.orderNo);
  });

  it('WeChat Pay on a computer: the Native QR code follows the order to "paid", then the way back to the shop', async () => {
    const order = await newOrder(wechatChannel, 'wxpay', '88.00');
    const page = await device('desktop', 'zh-CN');
    await page.goto(order.payUrl);
    const trade = wechat.trades.get(order.orderNo)!;
    expect(trade.tradeType).toBe('NATIVE');
    // The QR code on the page is code_url's, as qrcode-generator draws it.
    const qr = qrcode(0, 'M');
    qr.addData(trade.codeUrl);
    qr.make();
    const drawn = / d="([^"]+)"/.exec(qr.createSvgTag({ cellSize: 4, margin: 2, scalable: true }))![1];
    expect(await page.locator('.qr svg path').getAttribute('d')).toBe(drawn);
    await shoot(page, 'wechat-native');
    // The payer scans it with WeChat and pays: the page, which refreshes itself, turns to "paid".
    const scanned = await fetch(`${wechat.url}/fake/scan-and-pay`, { method: 'POST', body: new URLSearchParams({ code_url: trade.codeUrl }) });
    expect(scanned.status).toBe(200);
    await page.locator('#screen-paid').waitFor({ timeout: 20_000 });
    expect(await page.locator('.state').innerText()).toBe('支付成功');
    await shoot(page, 'paid');
    await page.getByRole('link', { name: '返回山河书店 Hills Books' }).click();
    await page.waitForURL((url) => url.href.startsWith(order.returnUrl));
    await merchantNotified(order.orderNo);
  });

  it("WeChat Pay in a phone browser: H5 (the payer's address, our origin as Referer), WeChat returns the payer to the shop", async () => {
    const order = await newOrder(wechatChannel, 'wxpay', '19.99');
    const page = await device('phone');
    await page.goto(order.payUrl);
    await expectSummary(page, '19.99');
    const h5 = wechat.calls.find((c) => c.path === '/v3/pay/transactions/h5' && c.body?.out_trade_no === order.orderNo)!;
    expect(h5.body).toMatchObject({
      scene_info: { payer_client_ip: '127.0.0.1', h5_info: { type: 'Wap' } },
      description: '《山河岁月》精装版 · Hills and Rivers, hardcover',
    });
    await shoot(page, 'wechat-h5');
    await page.getByRole('link', { name: 'Pay with WeChat' }).click();
    // WeChat's page accepted the Referer and the address (it refuses otherwise), and the payer confirms.
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.waitForURL((url) => url.href.startsWith(order.returnUrl));
    expect(wechat.payerRefusals).toEqual([]);
    await merchantNotified(order.orderNo);
  });

  it("WeChat Pay inside WeChat: OAuth for the openid, JSAPI under the page's nonce, the waiting screen, then the way back", async () => {
    const order = await newOrder(wechatChannel, 'wxpay', '66.60');
    const page = await device('wechat');
    const csp: string[] = [];
    page.on('response', (res) => {
      if (res.url().includes(`/pay/${order.orderNo}`) && res.headers()['content-security-policy']) csp.push(res.headers()['content-security-policy']);
    });
    bridge = 'cancel';
    await page.goto(order.payUrl);
    // Back from WeChat's OAuth with a code: the trade is the payer's own.
    expect(new URL(page.url()).searchParams.get('code')).toMatch(/^[0-9a-f]{32}$/);
    const trade = wechat.trades.get(order.orderNo)!;
    expect([trade.tradeType, trade.openid]).toEqual(['JSAPI', wechat.oauthOpenid]);
    // The page called the bridge at once (the payer closed WeChat's window here); its button calls it again.
    await waitFor(() => bridgeCalls > 0, 10_000, 'getBrandWCPayRequest called');
    expect(wechat.payerRefusals).toEqual([]);
    await page.getByRole('button', { name: 'Pay with WeChat' }).waitFor();
    // Reloaded (here in both languages), the page comes back through OAuth, its used code refused by WeChat, on the same trade.
    await shoot(page, 'wechat-jsapi');
    expect(wechat.calls.filter((c) => c.path === '/v3/pay/transactions/jsapi' && c.body?.out_trade_no === order.orderNo)).toHaveLength(1);
    bridge = 'pay';
    await page.getByRole('button', { name: 'Pay with WeChat' }).click();
    await page.locator('#screen-wait, #screen-paid').first().waitFor();
    expect(new URL(page.url()).searchParams.get('step')).toBe('wait');
    await page.locator('#screen-paid').waitFor({ timeout: 20_000 });
    await page.getByRole('link', { name: 'Back to 山河书店 Hills Books' }).click();
    await page.waitForURL((url) => url.href.startsWith(order.returnUrl));
    expect(wechat.payerRefusals).toEqual([]);
    // Only the JSAPI answer carries a script, and it ran under that answer's nonce.
    expect(csp.some((policy) => /script-src 'nonce-[0-9a-f]{32}'/.test(policy) && /frame-ancestors 'none'/.test(policy))).toBe(true);
    await merchantNotified(order.orderNo);
  });

  it("an order closed by the shop, and one whose time ran out, say so in the payer's words with the way back to the shop (issue 38)", async () => {
    const closed = await newOrder(alipayChannel, 'alipay', '12.00');
    expect((await orderClose(api.app, merchant, closed.orderNo)).body.code).toBe(1);
    const expired = await newOrder(wechatChannel, 'wxpay', '13.00');
    await sql(api.app).query(`UPDATE orders SET expires_at = now() - interval '1 second' WHERE order_no = $1`, [expired.orderNo]);
    // The worker's expiry pass cancels it within about a second.
    await waitFor(async () => (await orderRow(api.app, expired.orderNo)).status === 'cancelled', 10_000, 'the expired order cancelled');
    for (const [order, name, title, zhTitle] of [
      [closed, 'closed', 'This order is closed', '此订单已关闭'],
      [expired, 'expired', 'The time to pay has run out', '付款时间已过'],
    ] as const) {
      const page = await device(name === 'closed' ? 'desktop' : 'phone');
      await page.goto(order.payUrl);
      expect(await page.locator('.state').innerText()).toBe(title);
      expect(await page.title()).toBe(`${title} · 山河书店 Hills Books`);
      const action = await page.locator('.action').innerText();
      expect(action).toContain('It was not paid, and it can no longer be paid. To buy, go back to 山河书店 Hills Books and order again.');
      expect(action).not.toMatch(/cancelled|pending|nothing left/i);
      expect(await page.locator('#pay, form, .qr').count()).toBe(0);
      await shoot(page, name);
      expect(await page.locator('.state').innerText()).toBe(title);
      await page.goto(`${order.payUrl}&lang=zh-CN`);
      expect(await page.locator('.state').innerText()).toBe(zhTitle);
      await page.getByRole('link', { name: '返回山河书店 Hills Books' }).click();
      await page.waitForURL((url) => url.href.startsWith(order.returnUrl));
    }
  });

  it('a device the channel or the provider cannot serve is told so in plain words, with what works instead', async () => {
    // No H5 at this merchant: a phone browser is told to use WeChat or a computer.
    const order = await newOrder(noH5Channel, 'wxpay', '5.00');
    const phone = await device('phone');
    await phone.goto(order.payUrl);
    expect(await phone.locator('.state').innerText()).toBe('This order cannot be paid here');
    expect(await phone.locator('.action').innerText()).toContain('WeChat Pay cannot be used in a phone browser for this order.');
    expect(await phone.locator('ul.instead li').allInnerTexts()).toEqual([
      'Open this page in WeChat: send the link to yourself in a chat and tap it.',
      'Open this page on a computer.',
    ]);
    await shoot(phone, 'not-here');
    expect(wechat.trades.has(order.orderNo)).toBe(false);

    // Alipay cannot open inside WeChat: the payer is shown how to leave it.
    const viaAlipay = await newOrder(alipayChannel, 'alipay', '5.00');
    const inWechat = await device('wechat', 'zh-CN');
    await inWechat.goto(viaAlipay.payUrl);
    expect(await inWechat.locator('.action').innerText()).toContain('支付宝无法在微信中打开');
    expect(await inWechat.locator('.action').innerText()).toContain('在浏览器打开');
    await shoot(inWechat, 'alipay-in-wechat');

    // Started as a QR code on a computer, the order cannot become H5 on a phone: said so, with the way back.
    const started = await newOrder(wechatChannel, 'wxpay', '7.00');
    const desktop = await device('desktop');
    await desktop.goto(started.payUrl);
    const onPhone = await device('phone');
    await onPhone.goto(started.payUrl);
    expect(await onPhone.locator('.state').innerText()).toBe('This payment was started another way');
    expect(await onPhone.locator('.back a').getAttribute('href')).toBe(started.returnUrl);
    await shoot(onPhone, 'started-elsewhere');
    expect(wechat.calls.filter((c) => c.body?.out_trade_no === started.orderNo).map((c) => c.path)).toEqual(['/v3/pay/transactions/native']);
  });
});
