import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplicationContext } from '@nestjs/common';
import { type BrowserContext, type Page, chromium } from 'playwright-core';
import ts from 'typescript';
import { formatCny } from '@app/common';
import type { Credentials } from '@app/operator';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { CallbackReceiver, waitFor } from './helpers/callbacks';
import { freePort } from './helpers/free-port';
import { createOrder, sql } from './helpers/orders';
import { createSellOrder, refundCreate } from './helpers/money-out';
import { PASSWORD } from './helpers/portal';

const CHROMIUM = '/usr/bin/chromium';
const WIDTHS = { desktop: 1280, phone: 390 } as const;

/**
 * The portal in a real browser (Debian's Chromium driven by playwright-core): the journey of
 * SPEC 8a from an invitation to sign-out, with screenshots of each page at desktop and phone
 * width in both languages under the test's temp folder.
 */
describe('merchant portal in a browser', () => {
  jest.setTimeout(180_000);
  let api: TestApi;
  let worker: INestApplicationContext;
  let receiver: CallbackReceiver;
  let context: BrowserContext;
  let page: Page;
  let base: string;
  let shop: Credentials;
  let channelId: number;
  let orders: { order_no: string }[];
  let refundNo: string;
  let sellOrderNo: string;
  const shots = mkdtempSync(join(tmpdir(), 'portal-screens-'));

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium fonts-noto-cjk (.ci/run does)`);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    receiver = await CallbackReceiver.start();
    // The first attempt of each event fails, so the order page has a failed and a delivered attempt to show.
    receiver.respond = (_callback, index) => (index === 0 ? { status: 500, body: 'busy, try later' } : { status: 200, body: 'success' });
    api = await startTestApi({ PUBLIC_BASE_URL: base, CALLBACK_ALLOW_PRIVATE: 'true', CALLBACK_RETRY_SCHEDULE: '1s,1s,1s' });
    await api.app.listen({ port, host: '127.0.0.1' });
    worker = await createWorkerApp(api.config, { shutdownHooks: false });

    const made = await merchantWithChannels(api.operator, { notifyUrl: receiver.url });
    shop = made.merchant;
    channelId = made.channels.remotepay;
    orders = [];
    for (const amount of ['1234.56', '88.00', '5.20']) {
      const res = await createOrder(api.app, shop, {
        cny_amount: amount,
        paychannel_id: made.channels.remotepay,
        merchant_order_no: `SHOP-${amount.replace('.', '')}`,
      });
      expect(res.body.code).toBe(1);
      orders.push(res.body.data);
    }
    for (const order of orders.slice(0, 2)) {
      const token = new URL((await sql(api.app).query(`SELECT pay_url FROM orders WHERE order_no = $1`, [order.order_no]))[0].pay_url).searchParams.get(
        'token',
      )!;
      const paid = await api.app.inject({
        method: 'POST',
        url: `/sandbox/checkout/${order.order_no}/pay`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `token=${token}`,
      });
      expect(paid.statusCode).toBe(200);
    }
    await waitFor(
      async () => {
        const rows = await sql(api.app).query(`SELECT count(*)::int AS n FROM callback_deliveries WHERE merchant_id = $1 AND status = 'succeeded'`, [shop.id]);
        return rows[0].n >= 4;
      },
      60_000,
      'order.paid and order.completed delivered for both paid orders',
    );

    // Money out through the signed API: part of the 88.00 order refunded, and a payout of 100.00 (+0.60 fee).
    const refund = await refundCreate(api.app, shop, {
      order_no: orders[1].order_no,
      refund_amount: '8.00',
      merchant_refund_no: 'R-88-1',
      reason: 'one item returned',
    });
    expect(refund.body.code).toBe(1);
    refundNo = refund.body.data.refund_no;
    const sell = await createSellOrder(api.app, shop, { cny_amount: '100.00', paychannel_id: made.channels.remotepay });
    expect(sell.body.code).toBe(1);
    sellOrderNo = sell.body.data.order_no;
    await waitFor(
      async () => {
        const [refundRow] = await sql(api.app).query(`SELECT status FROM refunds WHERE refund_no = $1`, [refundNo]);
        const [sellRow] = await sql(api.app).query(`SELECT status FROM orders WHERE order_no = $1`, [sellOrderNo]);
        return refundRow.status === 'succeeded' && sellRow.status === 'completed';
      },
      60_000,
      'the refund succeeded and the payout completed',
    );

    context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'portal-chromium-')), {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: WIDTHS.desktop, height: 900 },
      locale: 'en-US',
    });
    page = context.pages()[0] ?? (await context.newPage());
  });

  afterAll(async () => {
    await context?.close();
    await worker?.close();
    await api?.close();
    await receiver?.close();
    process.stdout.write(`portal screenshots: ${shots}\n`);
  });

  /** The current page at both widths, full length. */
  async function shoot(name: string): Promise<void> {
    const lang = (await page.getAttribute('html', 'lang')) ?? 'xx';
    for (const [width, px] of Object.entries(WIDTHS)) {
      await page.setViewportSize({ width: px, height: 900 });
      mkdirSync(shots, { recursive: true });
      await page.screenshot({ path: join(shots, `${name}-${lang}-${width}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: WIDTHS.desktop, height: 900 });
  }

  const heading = () => page.locator('h1').first().innerText();

  /** At 390 px every order row shows its number, status, amount and time inside the screen, nothing scrolled out of sight. */
  async function expectOrdersReadableOnPhone(amounts: string[]): Promise<void> {
    await page.setViewportSize({ width: WIDTHS.phone, height: 900 });
    try {
      const rows = page.locator('table.orders tbody tr');
      expect(await rows.count()).toBe(amounts.length);
      const shown: string[] = [];
      for (let i = 0; i < amounts.length; i++) {
        const cells = rows.nth(i).locator('td');
        shown.push((await cells.nth(3).innerText()).trim());
        // The merchant order no. column (1) is left out on a phone: its number shows under the order's.
        for (const cell of [cells.nth(0).locator('a'), cells.nth(2).locator('.badge'), cells.nth(3), cells.last()]) {
          const box = (await cell.boundingBox())!;
          expect([i, box.x >= 0, box.x + box.width <= WIDTHS.phone]).toEqual([i, true, true]);
        }
      }
      expect(shown).toEqual(amounts);
      expect(await page.locator('.table-scroll').evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
    } finally {
      await page.setViewportSize({ width: WIDTHS.desktop, height: 900 });
    }
  }
  /** At 390 px the page fits the screen: nothing to scroll sideways for but the tables that say so. */
  async function expectNothingScrollsSideways(name: string): Promise<void> {
    await page.setViewportSize({ width: WIDTHS.phone, height: 900 });
    try {
      expect([name, await page.locator('html').evaluate((html) => html.scrollWidth)]).toEqual([name, WIDTHS.phone]);
    } finally {
      await page.setViewportSize({ width: WIDTHS.desktop, height: 900 });
    }
  }
  /** The list newest first: the sell order, then the three top-ups. */
  const LIST_AMOUNTS = ['¥100.00', '¥5.20', '¥88.00', '¥1,234.56'];

  it('walks a merchant from the invitation to sign-out', async () => {
    const { invitation_url } = await api.operator.portalUsers.invite(shop.id, 'owner@shop.example');
    const token = invitation_url.split('/').pop()!;
    const sent: string[] = [];
    const onRequest = (request: { url(): string; headers(): Record<string, string> }): void => {
      sent.push(`${request.url()} referer=${request.headers().referer ?? ''}`);
    };
    page.on('request', onRequest);
    await page.goto(invitation_url);
    // SPEC 8a: the page took the token out of its address before anything loaded; no Referer carries it.
    expect(page.url()).toBe(`${base}/portal/invite`);
    await shoot('invite');
    await page.getByLabel('New password', { exact: true }).fill(PASSWORD);
    await page.getByLabel('Repeat the new password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Set password and sign in' }).click();
    await page.waitForURL(`${base}/portal`);
    page.off('request', onRequest);
    expect(sent.slice(1).filter((line) => line.includes(token))).toEqual([]);
    expect(sent.length).toBeGreaterThan(3);

    // Sign out, then in with the new password.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/portal\/login\?signed_out=1$/);
    await page.getByLabel('Email').fill('owner@shop.example');
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect(await page.getByRole('alert').innerText()).toBe('The email or the password is wrong.');
    await shoot('login');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/portal`);

    // Overview: the mode, balances and today's paid orders (1,234.56 + 88.00; the payout is money out, not a payment).
    expect(await heading()).toBe('Overview');
    expect(await page.locator('header #merchant-mode').innerText()).toBe('Test mode');
    const today = page.locator('section.tile', { hasText: 'Paid today' });
    expect(await today.locator('.figure').innerText()).toBe('¥1,322.56');
    expect(await today.locator('.muted').innerText()).toBe('2 orders');
    expect(await page.locator('svg.chart rect.bar').count()).toBe(14);
    const credited = (await post(api.app, '/api/merchant/orderQueryList', signed(shop, { status: 'completed', order_type: 1 }))).body.data as {
      list: { merchant_actual_amount: number }[];
    };
    expect(credited.list).toHaveLength(2);
    // Available: both credits, less the 8.00 refund and the payout's 100.00 + 0.60.
    const availableFen = credited.list.reduce((n, o) => n + o.merchant_actual_amount, 0) - 800 - 10_060;
    expect(await page.locator('section.tile', { hasText: 'Available balance' }).locator('.figure').innerText()).toBe(formatCny(availableFen));
    const movements = await page.locator('table.ledger tbody tr').allInnerTexts();
    expect(movements).toHaveLength(4);
    expect(movements[0]).toContain(sellOrderNo);
    expect(movements[0]).toContain('-¥100.60');
    await shoot('overview');

    // Orders: all four, then only the pending one, then only the sell order.
    await page.getByRole('link', { name: 'Orders', exact: true }).click();
    expect(await page.locator('table.orders tbody tr').count()).toBe(4);
    await page.getByLabel('Status').selectOption('pending');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/status=pending/);
    expect(await page.locator('table.orders tbody tr').count()).toBe(1);
    expect(await page.locator('table.orders tbody tr').innerText()).toContain(orders[2].order_no);
    await shoot('orders');
    await page.getByLabel('Status').selectOption('');
    await page.getByLabel('Type').selectOption('2');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/order_type=2/);
    const sellRows = await page.locator('table.orders tbody tr').allInnerTexts();
    expect(sellRows).toHaveLength(1);
    expect(sellRows[0]).toContain(sellOrderNo);
    expect(sellRows[0]).toContain('Sell (payout)');
    await page.getByRole('link', { name: 'Reset' }).click();
    await page.waitForURL(/\/portal\/orders$/);
    await expectOrdersReadableOnPhone(LIST_AMOUNTS);
    await shoot('orders-all');
    // Search by the shop's own number: the one order, its merchant order no. in its row.
    await page.getByLabel('Order no. or merchant order no.').fill('SHOP-520');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/q=SHOP-520/);
    const found = await page.locator('table.orders tbody tr').allInnerTexts();
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(orders[2].order_no);
    expect(found[0]).toContain('SHOP-520');
    await shoot('orders-search');
    await page.getByRole('link', { name: 'Reset' }).click();
    await page.waitForURL(/\/portal\/orders$/);

    // One order: its timeline and every callback attempt, the failed first ones included.
    await page.getByRole('link', { name: orders[0].order_no }).click();
    await page.waitForURL(new RegExp(`/portal/orders/${orders[0].order_no}$`));
    expect(await page.locator('.timeline li').count()).toBe(3);
    const deliveries = page.locator('article.delivery');
    expect(await deliveries.count()).toBe(2);
    const attempts = await page.locator('table.attempts tbody tr').allInnerTexts();
    expect(attempts.some((row) => row.includes('500') && row.includes('busy, try later'))).toBe(true);
    expect(attempts.some((row) => row.includes('200') && row.includes('success'))).toBe(true);
    await shoot('order');
    // On a phone each attempt's time, HTTP status and answer stay in view: nothing to scroll sideways for.
    await page.setViewportSize({ width: WIDTHS.phone, height: 900 });
    for (const row of await page.locator('table.attempts tbody tr').all()) {
      for (const cell of [2, 3, 5]) {
        const box = (await row.locator(`td:nth-child(${cell})`).boundingBox())!;
        expect([cell, box.x >= 0 && box.x + box.width <= WIDTHS.phone]).toEqual([cell, true]);
      }
    }
    await page.setViewportSize({ width: WIDTHS.desktop, height: 900 });

    // Resend: a third delivery of the latest event, with the same event_id.
    await page.getByRole('button', { name: 'Resend the latest callback' }).click();
    await page.waitForURL(/notice=resent/);
    expect(await page.getByRole('status').first().innerText()).toContain('order.completed');
    await waitFor(
      async () =>
        (
          await sql(api.app).query(`SELECT count(*)::int AS n FROM callback_deliveries d JOIN orders o ON o.id = d.order_id WHERE o.order_no = $1`, [
            orders[0].order_no,
          ])
        )[0].n === 3,
      10_000,
      'the resent delivery',
    );
    await page.reload();
    expect(await page.locator('article.delivery').count()).toBe(3);
    expect(await page.getByRole('heading', { name: 'Refunds' }).count()).toBe(1);
    expect(await page.getByText('No refund.', { exact: false }).count()).toBe(1);

    // The refunded order: its refund, what is left to refund, the refund's event and callback.
    await page.goto(`${base}/portal/orders/${orders[1].order_no}`);
    const refunds = page.locator('article.refund');
    expect(await refunds.count()).toBe(1);
    const refundText = await refunds.innerText();
    for (const text of ['Refund of ¥8.00', 'Succeeded', refundNo, 'R-88-1', 'one item returned'])
      expect([text, refundText.includes(text)]).toEqual([text, true]);
    const refundFacts = await page.locator('section', { hasText: 'Still refundable' }).locator('dl.facts').first().innerText();
    expect(refundFacts).toMatch(/Refunded\s+¥8\.00/);
    expect(refundFacts).toMatch(/Still refundable\s+¥80\.00/);
    expect(await page.locator('.timeline').innerText()).toContain('Refund succeeded (refund.succeeded)');
    await waitFor(
      async () => {
        await page.reload();
        return (await page.locator('article.delivery', { hasText: 'refund.succeeded' }).locator('.badge').innerText()) === 'Delivered';
      },
      20_000,
      'the refund.succeeded callback delivered',
    );
    await shoot('order-refunded');

    // The sell order: its payee with the account masked, never in full.
    await page.goto(`${base}/portal/orders/${sellOrderNo}`);
    expect(await page.locator('#payee-account').innerText()).toBe('6222********1234');
    expect(await page.locator('#payout-title .badge').innerText()).toBe('Paid out');
    expect(await page.locator('dl.facts').first().innerText()).toMatch(/Debited from your balance \(amount \+ fee\)\s+¥100\.60/);
    expect(await page.locator('.timeline').innerText()).toContain('Paid out to the payee (order.paid)');
    expect(await page.content()).not.toContain('6222021234561234');
    await shoot('sell-order');

    // The ledger: every movement, newest first, signed, with its order and refund.
    await page.getByRole('link', { name: 'Ledger', exact: true }).click();
    expect(await heading()).toBe('Ledger');
    const lines = await page.locator('table.ledger tbody tr').allInnerTexts();
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(new RegExp(`Payout \\(amount \\+ fee\\)\\s+${sellOrderNo}\\s+-¥100\\.60`));
    expect(lines[1]).toMatch(new RegExp(`Refund\\s+${orders[1].order_no}\\s+refund ${refundNo}\\s+-¥8\\.00`));
    expect(lines.slice(2).every((line) => line.includes('Order credited') && /\+¥[\d,]+\.\d\d$/.test(line.trim()))).toBe(true);
    await shoot('ledger');

    // Statements: today's movements with the balance after each, in both languages.
    await page.getByRole('link', { name: 'Statements', exact: true }).click();
    expect(await heading()).toBe('Statements');
    expect(await page.locator('table.ledger tbody tr').count()).toBe(4);
    await shoot('statements');
    await page.getByRole('link', { name: '简体中文' }).click();
    expect(await heading()).toBe('对账单');
    await shoot('statements');
    await page.getByRole('link', { name: 'English' }).click();

    await page.getByRole('link', { name: 'Channels', exact: true }).click();
    expect(await page.locator('table tbody tr').count()).toBe(3);
    expect(await page.locator('table tbody').innerText()).toContain('0.6%');
    await shoot('channels');

    // Refund from the order's page: the password again; a wrong one changes nothing.
    await page.goto(`${base}/portal/orders/${orders[0].order_no}`);
    const refundForm = page.locator('#refund-form');
    expect(await refundForm.innerText()).toContain('At most ¥1,234.56');
    await refundForm.getByLabel('Amount to refund (yuan)').fill('34.56');
    await refundForm.getByLabel('Reason (optional, at most 128 characters)').fill('size exchanged');
    await refundForm.getByLabel('Your password').fill('not the password');
    await refundForm.getByRole('button', { name: 'Refund' }).click();
    expect(await page.locator('#refund-error').innerText()).toBe('The password is wrong. Nothing was changed.');
    expect(await page.locator('article.refund').count()).toBe(0);
    expect(await refundForm.getByLabel('Amount to refund (yuan)').inputValue()).toBe('34.56');
    await shoot('order-refund-refused');
    await refundForm.getByLabel('Your password').fill(PASSWORD);
    await refundForm.getByRole('button', { name: 'Refund' }).click();
    await page.waitForURL(/refunded=\d{22}/);
    expect(await page.locator('#refund-done').innerText()).toMatch(/^The refund of ¥34\.56 was accepted \(refund no\. \d{22}\)/);
    expect(await page.locator('article.refund').innerText()).toContain('size exchanged');
    await shoot('order-refund');

    // Help: signing, callbacks, rotation and every error, for the shop's developers.
    await page.getByRole('link', { name: 'Help', exact: true }).click();
    expect(await heading()).toBe('Help for developers');
    expect(await page.locator('table.errors tbody tr').count()).toBe(22);
    await expectNothingScrollsSideways('help');
    await shoot('help');

    // Developers: rotate the secret, see it once.
    await page.getByRole('link', { name: 'Developers', exact: true }).click();
    expect(await page.locator('#api-key').innerText()).toBe(shop.api_key);
    expect(await page.locator('#api-mode').innerText()).toBe('Test mode');
    await shoot('developers');
    // Send test event: one signed webhook.test to the notify URL, its answer shown on the page.
    receiver.respond = () => ({ status: 200, body: 'success' });
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.locator('#test-result').waitFor();
    expect(await page.locator('#test-result').innerText()).toContain('Your endpoint accepted the test event.');
    expect(receiver.received.at(-1)!.body.event).toBe('webhook.test');
    await shoot('test-event');
    // The language switch on the answer reloads the developers page the form is on (it was a 404).
    await page.getByRole('link', { name: '简体中文' }).click();
    await page.locator('html[lang="zh-CN"]').waitFor();
    expect([new URL(page.url()).pathname, await heading()]).toEqual(['/portal/developers', '开发者']);
    await page.getByRole('link', { name: 'English' }).click();
    await page.locator('html[lang="en"]').waitFor();
    expect([new URL(page.url()).pathname, await heading()]).toEqual(['/portal/developers', 'Developers']);
    // A routine rotation (the default): the old secret keeps working for 24 hours beside the new one.
    expect(await page.getByLabel('Keeps working for 24 hours', { exact: false }).isChecked()).toBe(true);
    await page.getByLabel('I understand that a new secret replaces the current one', { exact: false }).check();
    // The password is asked again: a session left open must not hand out the new secret.
    await page.getByLabel('Your password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Rotate the secret' }).click();
    const secret = (await page.locator('#new-secret').innerText()).trim();
    expect(secret).toMatch(/^sk_/);
    await shoot('secret');
    await waitFor(
      async () => (await post(api.app, '/api/merchant/getPayChannels', signed({ ...shop, api_secret: secret }))).body.code === 1,
      1000,
      'the new secret',
    );
    expect((await post(api.app, '/api/merchant/getPayChannels', signed(shop))).body.code).toBe(1);
    // The signing examples on the page work as printed, given the secret in API_SECRET.
    await page.getByRole('link', { name: 'I have saved it' }).click();
    const env = { ...process.env, API_SECRET: secret };
    // Asynchronously: this process serves the requests the examples send.
    const run = promisify(execFile);
    const curl = await run('bash', ['-c', await page.locator('#example-curl').innerText()], { env, timeout: 20_000 });
    expect(JSON.parse(curl.stdout)).toMatchObject({ code: 1, data: { total: 4 } });
    const typescript = ts.transpileModule(await page.locator('#example-typescript').innerText(), {
      compilerOptions: { module: ts.ModuleKind.CommonJS },
    }).outputText;
    expect((await run(process.execPath, ['-e', typescript], { env, timeout: 20_000 })).stdout).toMatch(/code: 1,/);
    expect(await page.content()).not.toContain(secret);

    await page.getByRole('link', { name: 'Account', exact: true }).click();
    await shoot('account');

    // Switch the language: every page in Chinese, remembered across pages.
    await page.getByRole('link', { name: '简体中文' }).click();
    expect(await heading()).toBe('账户');
    await shoot('account');
    for (const [path, title, name] of [
      ['/portal', '概览', 'overview'],
      ['/portal/orders', '订单', 'orders'],
      [`/portal/orders/${orders[0].order_no}`, `订单 ${orders[0].order_no}`, 'order'],
      [`/portal/orders/${orders[1].order_no}`, `订单 ${orders[1].order_no}`, 'order-refunded'],
      [`/portal/orders/${sellOrderNo}`, `订单 ${sellOrderNo}`, 'sell-order'],
      ['/portal/ledger', '资金流水', 'ledger'],
      ['/portal/channels', '支付通道', 'channels'],
      ['/portal/help', '开发者帮助', 'help'],
      ['/portal/orders?q=SHOP-520', '订单', 'orders-search'],
      ['/portal/developers', '开发者', 'developers'],
    ]) {
      await page.goto(`${base}${path}`);
      expect(await heading()).toBe(title);
      if (name === 'orders') await expectOrdersReadableOnPhone(LIST_AMOUNTS);
      if (name === 'help') await expectNothingScrollsSideways(name);
      await shoot(name);
    }
    expect(await page.locator('html').getAttribute('lang')).toBe('zh-CN');
    expect(await page.locator('header #merchant-mode').innerText()).toBe('测试模式');
    expect(await page.locator('#api-mode').innerText()).toBe('测试模式');

    await page.getByRole('button', { name: '退出登录' }).click();
    await page.waitForURL(/\/portal\/login/);
    expect(await page.getByRole('status').innerText()).toBe('您已退出登录。');
    await shoot('login');
    await page.goto(`${base}/portal/orders`);
    await page.waitForURL(/\/portal\/login\?next=/);
  });

  it('shows the sandbox checkout in English and Chinese, switchable', async () => {
    const [{ pay_url }] = await sql(api.app).query(`SELECT pay_url FROM orders WHERE order_no = $1`, [orders[2].order_no]);
    await page.goto(pay_url);
    expect(await page.locator('html').getAttribute('lang')).toBe('en');
    expect(await page.getByRole('button', { name: 'Pay ¥5.20' }).count()).toBe(1);
    await shoot('checkout');
    await page.getByRole('link', { name: '简体中文' }).click();
    expect(await page.locator('html').getAttribute('lang')).toBe('zh-CN');
    expect(await page.title()).toContain('付款');
    await shoot('checkout');
  });

  it("a payer's failed attempt leaves the order payable: Fail, then Pay, and the merchant gets order.paid; each state of the page in the payer's words (issue 38)", async () => {
    const made = await createOrder(api.app, shop, {
      cny_amount: '7.70',
      paychannel_id: channelId,
      paychannel_paymethod: 'alipay',
      merchant_order_no: 'SHOP-770',
      subject: '山河岁月 · Hills and Rivers',
      return_url: 'https://shop.example/orders/SHOP-770',
    });
    expect(made.body.code).toBe(1);
    const orderNo = made.body.data.order_no;
    const [{ name: shopName }] = await sql(api.app).query(`SELECT name FROM merchants WHERE id = $1`, [shop.id]);
    const state = () => page.locator('.action .state').first().innerText();
    /** Back to the page in the other language through its switch, as a payer would. */
    const switchTo = async (lang: 'en' | 'zh-CN') => {
      await page.getByRole('link', { name: lang === 'en' ? 'English' : '简体中文' }).click();
      await page.locator(`html[lang="${lang}"]`).waitFor();
    };

    await page.goto(`${made.body.data.pay_url}&lang=en`);
    expect(await page.title()).toBe(`Pay ${shopName}`);
    // Fail: what happened, and the order still offered, in English then in Chinese.
    await page.getByRole('button', { name: 'Simulate a failed payment' }).click();
    expect(await state()).toBe('Payment failed');
    expect(await page.locator('.action').innerText()).toContain('Nothing was paid. You can try again.');
    expect(await page.getByRole('button', { name: 'Pay ¥7.70 with Alipay' }).count()).toBe(1);
    await shoot('checkout-failed');
    await switchTo('zh-CN');
    await page.getByRole('button', { name: '模拟付款失败' }).click();
    expect(await state()).toBe('付款未成功');
    await shoot('checkout-failed');
    expect((await sql(api.app).query(`SELECT status FROM orders WHERE order_no = $1`, [orderNo]))[0].status).toBe('pending');

    // Pay on the same order: paid, and the merchant hears it.
    await page.getByRole('button', { name: '使用支付宝支付 ¥7.70' }).click();
    expect(await state()).toBe('支付成功');
    expect(await page.getByRole('link', { name: `返回${shopName}` }).getAttribute('href')).toBe('https://shop.example/orders/SHOP-770');
    await shoot('checkout-paid');
    await switchTo('en');
    expect(await state()).toBe('Payment succeeded');
    await shoot('checkout-paid');
    const paid = await waitFor(
      () => receiver.received.find((c) => c.body.order_no === orderNo && c.body.event === 'order.paid'),
      30_000,
      "the merchant's order.paid",
    );
    expect(paid.body).toMatchObject({ status: 'paid', merchant_order_no: 'SHOP-770', cny_amount: '7.70' });
    expect(receiver.received.filter((c) => c.body.order_no === orderNo).map((c) => c.body.event)).not.toContain('order.cancelled');

    // Closed by the shop, and out of time: said so, nothing to pay.
    for (const [name, amount, end] of [
      ['checkout-closed', '7.80', 'close'],
      ['checkout-expired', '7.90', 'expire'],
    ] as const) {
      const other = await createOrder(api.app, shop, { cny_amount: amount, paychannel_id: channelId, merchant_order_no: `SHOP-${amount.replace('.', '')}` });
      const otherNo = other.body.data.order_no;
      if (end === 'close') expect((await post(api.app, '/api/merchant/orderClose', signed(shop, { order_no: otherNo }))).body.code).toBe(1);
      else await sql(api.app).query(`UPDATE orders SET expires_at = now() - interval '1 second' WHERE order_no = $1`, [otherNo]);
      // The worker's expiry pass cancels the expired one within about a second.
      await waitFor(
        async () => (await sql(api.app).query(`SELECT status FROM orders WHERE order_no = $1`, [otherNo]))[0].status === 'cancelled',
        10_000,
        `${name}: cancelled`,
      );
      await page.goto(`${other.body.data.pay_url}&lang=en`);
      expect(await state()).toBe(end === 'close' ? 'This order is closed' : 'The time to pay has run out');
      expect(await page.locator('.action').innerText()).toContain('It was not paid, and it can no longer be paid.');
      expect([await page.locator('form').count(), await page.title()]).toEqual([0, `${await state()} · ${shopName}`]);
      await shoot(name);
      await switchTo('zh-CN');
      expect(await state()).toBe(end === 'close' ? '此订单已关闭' : '付款时间已过');
      await shoot(name);
    }

    // The merchant's portal shows the failed attempts in the order's timeline, before its payment.
    await page.goto(`${base}/portal/login?lang=en`);
    await page.getByLabel('Email').fill('owner@shop.example');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/portal`);
    await page.goto(`${base}/portal/orders/${orderNo}`);
    const timeline = await page.locator('.timeline li').allInnerTexts();
    expect(timeline.map((line) => line.replace(/^\S+ \S+ /, '').replace(/ event_id .*$/, ''))).toEqual([
      'Order created',
      'A payment attempt failed; the order can still be paid (payment.attempt_failed)',
      'A payment attempt failed; the order can still be paid (payment.attempt_failed)',
      'Paid (order.paid)',
      'Completed, balance credited (order.completed)',
    ]);
    await shoot('order-attempt-failed');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/portal\/login/);
  });

  it("shows a second merchant's user none of the first merchant's data", async () => {
    const other = await merchantWithChannels(api.operator);
    const { invitation_url } = await api.operator.portalUsers.invite(other.merchant.id, 'owner@other.example');
    await context.clearCookies();
    await page.goto(`${invitation_url}?lang=en`);
    await page.getByLabel('New password', { exact: true }).fill(PASSWORD);
    await page.getByLabel('Repeat the new password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Set password and sign in' }).click();
    await page.waitForURL(`${base}/portal`);
    expect(await page.locator('section.tile', { hasText: 'Paid in the last 14 days' }).locator('.figure').innerText()).toBe('¥0.00');
    await page.goto(`${base}/portal/orders`);
    expect(await page.getByText('No order matches these filters.').count()).toBe(1);
    const foreign = await page.goto(`${base}/portal/orders/${orders[0].order_no}`);
    expect(foreign?.status()).toBe(404);
    expect(await heading()).toBe('Not found');
    // The address itself is in the language links; the page shows nothing of the order.
    const main = await page.locator('main').innerHTML();
    for (const order of orders) expect(main).not.toContain(order.order_no);
    await page.goto(`${base}/portal/ledger`);
    expect(await page.locator('table.ledger').count()).toBe(0);
    expect(await page.locator('main').innerText()).toContain('No movement yet');
    expect((await page.goto(`${base}/portal/orders/${sellOrderNo}`))?.status()).toBe(404);
    await page.goto(`${base}/portal/developers`);
    expect(await page.content()).not.toContain(shop.api_key);
  });
});
