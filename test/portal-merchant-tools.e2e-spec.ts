import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCode } from '@app/common';
import type { Credentials } from '@app/operator';
import { shanghaiDate } from '@app/recon';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { books, completedOrder, createSellOrder } from './helpers/money-out';
import { createOrder, sql } from './helpers/orders';
import { PASSWORD, PortalClient, inviteAndAccept } from './helpers/portal';
import { numbersASpreadsheetWouldRound, readAsSpreadsheet, shown } from './helpers/spreadsheet';

const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ');
/** The order numbers the orders page lists, in order. */
const listed = (html: string) => [...html.matchAll(/<td class="order-no"><a href="\/portal\/orders\/(\d{22})"/g)].map((m) => m[1]);

/**
 * What SPEC 6 and 8a ask of the portal for a shop's people (issue 38): the orders CSV a
 * spreadsheet reads right, the search by either number, the Refund button with the password
 * again, the help page in both languages, and a statements page that never links to the future.
 */
describe('merchant portal: orders CSV, search, Refund, help, statements links', () => {
  let api: TestApi;
  let shop: Credentials;
  let channel: number;
  let client: PortalClient;
  let n = 0;

  beforeAll(async () => {
    api = await startTestApi();
    const made = await merchantWithChannels(api.operator);
    shop = made.merchant;
    channel = made.channels.remotepay;
    client = await inviteAndAccept(api.app, api.operator, shop.id, 'tools@shop.example');
  });
  afterAll(() => api?.close());

  const csvOf = async (query: string, lang: string) => {
    const res = await api.app.inject({
      method: 'GET',
      url: `/portal/orders/export.csv?${query}`,
      headers: { cookie: client.cookieHeader(), 'accept-language': lang },
    });
    expect([res.statusCode, res.headers['content-type']]).toEqual([200, 'text/csv; charset=utf-8']);
    return res.body;
  };

  describe('the orders CSV, read as a spreadsheet reads it', () => {
    let top: { order_no: string };
    let digits: { order_no: string };
    let payout: { order_no: string; merchant_actual_amount: number };

    beforeAll(async () => {
      top = await completedOrder(api.app, shop, { cny_amount: '1234.56', paychannel_id: channel, merchant_order_no: 'SHOP-2026-001' });
      // A shop's own number of digits only, with leading zeros: a spreadsheet would make it 1.23457E+19.
      digits = await completedOrder(api.app, shop, { cny_amount: '88.00', paychannel_id: channel, merchant_order_no: '00012345678901234567' });
      const sell = await createSellOrder(api.app, shop, { cny_amount: '100.00', paychannel_id: channel, merchant_order_no: '-1' });
      expect(sell.body.code).toBe(1);
      payout = sell.body.data;
    });

    it('keeps every order and merchant number to the last digit as text, no number a spreadsheet would round; amounts in yuan', async () => {
      const sheet = readAsSpreadsheet(await csvOf('', 'en'));
      expect(numbersASpreadsheetWouldRound(sheet)).toEqual([]);
      expect(sheet[0].map(shown)).toEqual([
        'Order no.',
        'Merchant order no.',
        'Type',
        'Status',
        'Amount (yuan)',
        'Service rate',
        'Service fee (yuan)',
        'Net amount (yuan)',
        'Created (Asia/Shanghai)',
        'Updated (Asia/Shanghai)',
      ]);
      const rows = sheet.slice(1);
      const byNo = new Map(rows.map((r) => [shown(r[0]), r]));
      expect(rows.every((r) => r[0].type === 'text' && /^\d{22}$/.test(shown(r[0])))).toBe(true);
      for (const [order, merchantNo] of [
        [top.order_no, 'SHOP-2026-001'],
        [digits.order_no, '00012345678901234567'],
        [payout.order_no, '-1'],
      ]) {
        const row = byNo.get(order)!;
        expect([order, row[1]]).toEqual([order, { type: 'text', text: merchantNo }]);
      }
      const topRow = byNo.get(top.order_no)!.map(shown);
      expect(topRow.slice(2, 8)).toEqual(['Buy (top-up)', 'Completed', '1234.56', '0.006', '7.41', '1227.15']);
      // A payout takes amount and fee from the balance: negative, as the list shows it.
      const payoutRow = byNo.get(payout.order_no)!.map(shown);
      expect([...payoutRow.slice(2, 3), ...payoutRow.slice(4, 8)]).toEqual([
        'Sell (payout)',
        '100',
        '0.006',
        '0.6',
        String(-payout.merchant_actual_amount / 100),
      ]);
      expect(topRow[8]).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    });

    it('writes its headers, types and statuses in the page language', async () => {
      const sheet = readAsSpreadsheet(await csvOf('', 'zh-CN'));
      expect(sheet[0].map(shown)).toEqual([
        '订单号',
        '商户订单号',
        '类型',
        '状态',
        '金额（元）',
        '费率',
        '手续费（元）',
        '净额（元）',
        '创建时间（北京时间）',
        '更新时间（北京时间）',
      ]);
      const topRow = sheet.find((r) => shown(r[0]) === top.order_no)!.map(shown);
      expect(topRow.slice(2, 4)).toEqual(['充值（买入）', '已完成']);
    });
  });

  describe('search by order_no or merchant_order_no', () => {
    let first: { order_no: string };
    let second: { order_no: string };

    beforeAll(async () => {
      first = (await createOrder(api.app, shop, { cny_amount: '3.00', paychannel_id: channel, merchant_order_no: 'FIND-ME' })).body.data;
      second = (await createOrder(api.app, shop, { cny_amount: '4.00', paychannel_id: channel })).body.data;
    });

    it('finds an order by either number, with the other filters, and exports just that', async () => {
      expect(listed((await client.get('/portal/orders?q=FIND-ME')).html)).toEqual([first.order_no]);
      expect(listed((await client.get(`/portal/orders?q=${second.order_no}`)).html)).toEqual([second.order_no]);
      expect(listed((await client.get(`/portal/orders?q=+${second.order_no}+`)).html)).toEqual([second.order_no]);
      expect(listed((await client.get('/portal/orders?q=FIND-ME&status=completed')).html)).toEqual([]);
      expect(listed((await client.get('/portal/orders?q=FIND-ME&status=pending')).html)).toEqual([first.order_no]);
      expect(listed((await client.get('/portal/orders?q=FIND')).html)).toEqual([]);
      // The merchant's own number is a column of the list too.
      expect((await client.get('/portal/orders?q=FIND-ME')).html).toMatch(/<td class="merchant-order-no[^"]*">FIND-ME<\/td>/);
      const sheet = readAsSpreadsheet(await csvOf('q=FIND-ME', 'en'));
      expect(sheet.slice(1).map((r) => shown(r[0]))).toEqual([first.order_no]);
    });

    it("answers a search that cannot be a number with a 400 page, and finds nothing of another merchant's", async () => {
      const bad = await client.get(`/portal/orders?q=${encodeURIComponent('a b')}`);
      expect(bad.status).toBe(400);
      expect(text(bad.html)).toContain('These filters are not valid: Order no. or merchant order no.');
      const other = await merchantWithChannels(api.operator);
      const theirs = (await createOrder(api.app, other.merchant, { cny_amount: '5.00', paychannel_id: other.channels.remotepay, merchant_order_no: 'THEIRS' }))
        .body.data;
      expect(listed((await client.get(`/portal/orders?q=${theirs.order_no}`)).html)).toEqual([]);
      expect(listed((await client.get('/portal/orders?q=THEIRS')).html)).toEqual([]);
    });
  });

  describe('Refund on the order page', () => {
    const refundRows = async (orderNo: string) =>
      (await sql(api.app).query(
        `SELECT r.refund_no, r.refund_fen::int AS fen, r.status FROM refunds r JOIN orders o ON o.id = r.order_id WHERE o.order_no = $1`,
        [orderNo],
      )) as { refund_no: string; fen: number; status: string }[];
    const ledgerCount = async () =>
      (await sql(api.app).query(`SELECT count(*)::int AS n FROM ledger_entries WHERE merchant_id = $1`, [shop.id]))[0].n as number;
    const formNo = (html: string) => /name="merchant_refund_no" value="([^"]+)"/.exec(html)?.[1] ?? null;

    it('refunds with the password again, by refundCreate’s rules; a wrong password changes nothing', async () => {
      const order = await completedOrder(api.app, shop, { cny_amount: '50.00', paychannel_id: channel, merchant_order_no: `R-${++n}` });
      const page = await client.get(`/portal/orders/${order.order_no}`);
      expect(page.status).toBe(200);
      expect(text(page.html)).toContain('At most ¥50.00, what is still refundable.');
      const merchantRefundNo = formNo(page.html)!;
      expect(merchantRefundNo).toMatch(/^portal-[A-Za-z0-9_-]{16}$/);
      const before = { books: await books(api.app, shop.id), ledger: await ledgerCount() };

      const wrong = await client.post(`/portal/orders/${order.order_no}/refund`, {
        refund_amount: '20.00',
        reason: 'damaged',
        merchant_refund_no: merchantRefundNo,
        password: 'not the password',
      });
      expect(wrong.status).toBe(400);
      expect(text(wrong.html)).toContain('The password is wrong. Nothing was changed.');
      // What was typed stays, the password does not.
      expect(wrong.html).toContain('value="20.00"');
      expect(wrong.html).not.toContain('not the password');
      expect(await refundRows(order.order_no)).toEqual([]);
      expect({ books: await books(api.app, shop.id), ledger: await ledgerCount() }).toEqual(before);

      const tooMuch = await client.post(`/portal/orders/${order.order_no}/refund`, {
        refund_amount: '50.01',
        merchant_refund_no: merchantRefundNo,
        password: PASSWORD,
      });
      expect([tooMuch.status, text(tooMuch.html).includes('That is more than what is left to refund (¥50.00). Nothing was changed.')]).toEqual([400, true]);
      for (const amount of ['0', '1.005', 'abc', '']) {
        const bad = await client.post(`/portal/orders/${order.order_no}/refund`, {
          refund_amount: amount,
          merchant_refund_no: merchantRefundNo,
          password: PASSWORD,
        });
        expect([amount, bad.status, text(bad.html).includes('Enter an amount greater than 0 with at most 2 decimals')]).toEqual([amount, 400, true]);
      }
      expect(await refundRows(order.order_no)).toEqual([]);

      const done = await client.post(`/portal/orders/${order.order_no}/refund`, {
        refund_amount: '20.00',
        reason: 'damaged',
        merchant_refund_no: merchantRefundNo,
        password: PASSWORD,
      });
      expect(done.status).toBe(303);
      const [refund] = await refundRows(order.order_no);
      expect(refund).toMatchObject({ fen: 2000 });
      expect(done.location).toBe(`/portal/orders/${order.order_no}?refunded=${refund.refund_no}#refunds-title`);
      const after = await client.get(done.location!);
      expect(text(after.html)).toContain(`The refund of ¥20.00 was accepted (refund no. ${refund.refund_no})`);
      // The same form sent again is the same refund (its merchant_refund_no), not a second one.
      const again = await client.post(`/portal/orders/${order.order_no}/refund`, {
        refund_amount: '20.00',
        reason: 'damaged',
        merchant_refund_no: merchantRefundNo,
        password: PASSWORD,
      });
      expect(again.status).toBe(303);
      expect(await refundRows(order.order_no)).toHaveLength(1);
      expect((await books(api.app, shop.id)).available).toBe(before.books.available - 2000);
    });

    it('offers no Refund where refundCreate would refuse it: a paid order not completed yet, a payout, another merchant’s order', async () => {
      const pending = (await createOrder(api.app, shop, { cny_amount: '7.00', paychannel_id: channel })).body.data;
      expect((await client.get(`/portal/orders/${pending.order_no}`)).html).not.toContain('id="refund-form"');
      await sql(api.app).query(`UPDATE orders SET status = 'paid' WHERE order_no = $1`, [pending.order_no]);
      const paid = await client.get(`/portal/orders/${pending.order_no}`);
      expect([paid.html.includes('id="refund-form"'), text(paid.html).includes('can be refunded once it is completed')]).toEqual([false, true]);
      // A form sent anyway answers refundCreate's refusal, and nothing moves.
      const refused = await client.post(`/portal/orders/${pending.order_no}/refund`, {
        refund_amount: '1.00',
        merchant_refund_no: `portal-x${++n}`,
        password: PASSWORD,
      });
      expect([refused.status, /<p class="error" role="alert"[^>]*>([^<]*)</.exec(refused.html)?.[1]]).toEqual([
        409,
        'This order cannot be refunded in its current state.',
      ]);
      expect(await refundRows(pending.order_no)).toEqual([]);

      const sell = await createSellOrder(api.app, shop, { cny_amount: '1.00', paychannel_id: channel });
      expect((await client.get(`/portal/orders/${sell.body.data.order_no}`)).html).not.toContain('id="refund-form"');

      const other = await merchantWithChannels(api.operator);
      const theirs = await completedOrder(api.app, other.merchant, { cny_amount: '9.00', paychannel_id: other.channels.remotepay });
      const foreign = await client.post(`/portal/orders/${theirs.order_no}/refund`, {
        refund_amount: '1.00',
        merchant_refund_no: `portal-y${++n}`,
        password: PASSWORD,
      });
      expect(foreign.status).toBe(404);
      expect(await refundRows(theirs.order_no)).toEqual([]);
    });

    it('refuses a form without its CSRF token', async () => {
      const order = await completedOrder(api.app, shop, { cny_amount: '6.00', paychannel_id: channel });
      await client.get(`/portal/orders/${order.order_no}`);
      const forged = await client.post(`/portal/orders/${order.order_no}/refund`, {
        _csrf: null,
        refund_amount: '1.00',
        merchant_refund_no: 'portal-z',
        password: PASSWORD,
      });
      expect(forged.status).toBe(403);
      expect(await refundRows(order.order_no)).toEqual([]);
    });
  });

  describe('the help page', () => {
    it('explains signing, callbacks, rotation and every error code, in English and in Chinese', async () => {
      const en = await client.get('/portal/help', { 'accept-language': 'en' });
      expect(en.status).toBe(200);
      const words = text(en.html);
      for (const part of ['Signing a request', 'Orders and their numbers', 'Callbacks and retries', 'Rotating the secret', 'Errors and what to do'])
        expect([part, words.includes(part)]).toEqual([part, true]);
      // SPEC 5 (issue 38): a failed attempt leaves the order payable; a merchant_order_no stays bound to its first order.
      expect(words).toContain('does not end the order: it stays pending and can be paid on the same pay_url until it expires');
      expect(words).toContain('After a cancelled order, create a new one under a new merchant_order_no.');
      // The service's own figures: its base URL, its retry schedule, a signature its code computed.
      expect(words).toContain(`${api.config.publicBaseUrl}/api/merchant/`);
      expect(words).toContain('tried again after 15 s, 15 s, 30 s, 3 min, 10 min, 20 min, 30 min, 30 min, 30 min, 1 h, 3 h, 3 h, 3 h, 6 h, 6 h;');
      expect(en.html).toMatch(/<pre id="example-signature" class="wrap">[0-9a-f]{64}<\/pre>/);
      const codes = Object.values(ErrorCode).filter((v): v is ErrorCode => typeof v === 'number');
      for (const code of codes) {
        const row = new RegExp(`<tr id="error-${code}">([\\s\\S]*?)</tr>`).exec(en.html)?.[1] ?? '';
        expect([code, /<td class="do">[^<]{20,}<\/td>/.test(row)]).toEqual([code, true]);
      }
      const zh = await client.get('/portal/help', { 'accept-language': 'zh-CN' });
      expect(zh.status).toBe(200);
      const zhWords = text(zh.html);
      for (const part of [
        '请求签名',
        '订单与订单号',
        '订单取消后如需重新下单，请使用新的 merchant_order_no',
        '回调与重试',
        '轮换密钥',
        '错误码及处理方法',
        '失败后依次间隔 15 秒、15 秒、30 秒、3 分钟',
      ])
        expect([part, zhWords.includes(part)]).toEqual([part, true]);
      expect(zh.html).toMatch(/<tr id="error-40102">[\s\S]*?<td class="means">签名不正确<\/td>/);
      expect((await new PortalClient(api.app).get('/portal/help')).status).toBe(303);
    });

    it('is where the portal sends people, never to a README they do not have', () => {
      const portal = join(__dirname, '../apps/api/src/portal');
      const files = [...readdirSync(join(portal, 'views')).map((f) => join(portal, 'views', f)), join(portal, 'i18n/en.ts'), join(portal, 'i18n/zh-CN.ts')];
      for (const file of files) expect([file, /README/.test(readFileSync(file, 'utf8'))]).toEqual([file, false]);
    });
  });

  describe('the statements page', () => {
    it('links to the next day only up to today (a later day is 40000 by SPEC 6)', async () => {
      const today = shanghaiDate(new Date());
      const todayPage = await client.get(`/portal/statements?date=${today}`);
      expect(todayPage.status).toBe(200);
      expect(todayPage.html).not.toContain('rel="next"');
      expect(todayPage.html).toContain('rel="prev"');
      const yesterday = /href="\/portal\/statements\?date=(\d{4}-\d{2}-\d{2})" rel="prev"/.exec(todayPage.html)![1];
      const yesterdayPage = await client.get(`/portal/statements?date=${yesterday}`);
      expect(yesterdayPage.html).toContain(`href="/portal/statements?date=${today}" rel="next"`);
    });
  });
});
