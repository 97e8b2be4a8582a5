import { formatCny } from '@app/common';
import { RefundLifecycle, PayoutLifecycle } from '@app/orders';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { completedOrder, createSellOrder, refundCreate, refundRow } from './helpers/money-out';
import { orderRow, sql } from './helpers/orders';
import { PortalClient, inviteAndAccept } from './helpers/portal';

/** What a ledger page lists: each line's order number, refund number (or null) and signed amount, in page order. */
function ledgerLines(html: string): { orderNo: string; refundNo: string | null; amount: string }[] {
  const body = /<table class="ledger">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? '';
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map(([, row]) => ({
    orderNo: /href="\/portal\/orders\/(\d+)"/.exec(row)![1],
    refundNo: /refund (\d{22})</.exec(row)?.[1] ?? null,
    amount: /class="num money-(?:in|out)">([^<]+)</.exec(row)![1],
  }));
}
const olderLink = (html: string) => /href="(\/portal\/ledger\?before=\d+)" rel="next"/.exec(html)?.[1] ?? null;
const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

/** The portal's money pages (SPEC 8a with SPEC 5's money out) against real PostgreSQL: the ledger, refunds, payouts and the mode. */
describe('merchant portal: money out and mode', () => {
  let api: TestApi;
  let n = 0;
  const email = (tag: string) => `${tag}-${++n}@money.example`;

  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(async () => {
    await api?.close();
  });

  it('pages the ledger newest first by a cursor, every movement once, leaving out zero deposits', async () => {
    const shop = await merchantWithChannels(api.operator, { depositRate: '0.1' });
    const client = await inviteAndAccept(api.app, api.operator, shop.merchant.id, email('pages'));
    // 11 completed top-ups with a deposit rate: 22 entries, a page of 20 and one of 2.
    for (let i = 0; i < 11; i++) await completedOrder(api.app, shop.merchant, { cny_amount: `${100 + i}.00`, paychannel_id: shop.channels.processor });
    const expected: { order_no: string; amount_fen: number }[] = await sql(api.app).query(
      `SELECT o.order_no, l.amount_fen::int AS amount_fen FROM ledger_entries l JOIN orders o ON o.id = l.order_id
        WHERE l.merchant_id = $1 ORDER BY l.created_at DESC, l.id DESC`,
      [shop.merchant.id],
    );
    expect(expected).toHaveLength(22);

    const first = await client.get('/portal/ledger');
    expect(first.status).toBe(200);
    const firstLines = ledgerLines(first.html);
    expect(firstLines).toHaveLength(20);
    const next = olderLink(first.html)!;
    expect(next).not.toBeNull();
    const second = await client.get(next);
    const secondLines = ledgerLines(second.html);
    expect(secondLines).toHaveLength(2);
    expect(olderLink(second.html)).toBeNull();
    expect([...firstLines, ...secondLines].map((l) => [l.orderNo, l.amount])).toEqual(expected.map((e) => [e.order_no, `+${formatCny(e.amount_fen)}`]));
    expect(text(first.html)).toContain('Deposit set aside');

    // Without a deposit rate the zero deposit entries are in the books but not on the page.
    const plain = await merchantWithChannels(api.operator);
    const plainClient = await inviteAndAccept(api.app, api.operator, plain.merchant.id, email('plain'));
    const order = await completedOrder(api.app, plain.merchant, { cny_amount: '10.00', paychannel_id: plain.channels.processor });
    expect((await sql(api.app).query(`SELECT count(*)::int AS n FROM ledger_entries WHERE merchant_id = $1`, [plain.merchant.id]))[0].n).toBe(2);
    const plainPage = await plainClient.get('/portal/ledger');
    expect(ledgerLines(plainPage.html)).toEqual([{ orderNo: order.order_no, refundNo: null, amount: '+¥9.94' }]);
    expect(text(plainPage.html)).not.toContain('Deposit set aside');

    // Another merchant's entry, newer than this merchant's own, as the cursor: an empty page, none of either's lines.
    await completedOrder(api.app, shop.merchant, { cny_amount: '1.00', paychannel_id: shop.channels.processor });
    const [foreign] = await sql(api.app).query(`SELECT id FROM ledger_entries WHERE merchant_id = $1 ORDER BY id DESC LIMIT 1`, [shop.merchant.id]);
    const crossed = await plainClient.get(`/portal/ledger?before=${foreign.id}`);
    expect(crossed.status).toBe(200);
    expect(ledgerLines(crossed.html)).toEqual([]);
    expect(text(crossed.html)).toContain('No older movement.');
    for (const e of expected) expect(crossed.html).not.toContain(e.order_no);
    expect(crossed.html).not.toContain(order.order_no);
  });

  it('answers a malformed ledger link with a clear 400 page, never a 500', async () => {
    const shop = await merchantWithChannels(api.operator);
    const client = await inviteAndAccept(api.app, api.operator, shop.merchant.id, email('cursor'));
    for (const before of ['abc', '0', '-1', '1e3', '1.5', '9'.repeat(19), "1' OR '1'='1"]) {
      const res = await client.get(`/portal/ledger?before=${encodeURIComponent(before)}`);
      expect([before, res.status]).toEqual([before, 400]);
      expect(res.html).toContain('This page link is not valid.');
    }
    const repeated = await client.get('/portal/ledger?before=1&before=2');
    expect(repeated.status).toBe(400);
    expect((await client.get('/portal/ledger?before=', { 'accept-language': 'zh-CN' })).status).toBe(200);
  });

  it('shows a failed refund as failed with its debit given back, and a refused payout with its reversal', async () => {
    const shop = await merchantWithChannels(api.operator);
    const client = await inviteAndAccept(api.app, api.operator, shop.merchant.id, email('failures'));
    const paid = await completedOrder(api.app, shop.merchant, { cny_amount: '200.00', paychannel_id: shop.channels.processor });

    // The sandbox fails a refund of an amount ending in .44 and refuses such a payout.
    const refund = await refundCreate(api.app, shop.merchant, { order_no: paid.order_no, refund_amount: '20.44', merchant_refund_no: 'fail-1' });
    expect(refund.body.code).toBe(1);
    const pending = await client.get(`/portal/orders/${paid.order_no}`);
    expect(text(pending.html)).toMatch(/Being refunded ¥20\.44 Still refundable ¥179\.56/);
    expect(pending.html).toContain('class="badge badge-processing">Processing<');
    await api.app.get(RefundLifecycle).process((await refundRow(api.app, refund.body.data.refund_no)).id as string);

    const sell = await createSellOrder(api.app, shop.merchant, { cny_amount: '30.44', paychannel_id: shop.channels.processor });
    expect(sell.body.code).toBe(1);
    const inProgress = await client.get(`/portal/orders/${sell.body.data.order_no}`);
    expect(inProgress.html).toContain('class="badge badge-processing">In progress<');
    await api.app.get(PayoutLifecycle).payout((await orderRow(api.app, sell.body.data.order_no)).id as string);

    const refunded = await client.get(`/portal/orders/${paid.order_no}`);
    expect(refunded.html).toContain('class="badge badge-failed">Failed, balance restored<');
    expect(text(refunded.html)).toMatch(/Refunded ¥0\.00 Still refundable ¥200\.00/);
    expect(text(refunded.html)).toContain('Refund failed, balance restored (refund.failed)');

    const refused = await client.get(`/portal/orders/${sell.body.data.order_no}`, { 'accept-language': 'zh-CN' });
    expect(refused.html).toContain('class="badge badge-refused">已拒绝<');
    expect(text(refused.html)).toContain('代付被拒绝，扣款已退回余额（order.cancelled）');
    expect(refused.html).toContain('6222********1234');
    expect(refused.html).not.toContain('6222021234561234');

    // The ledger: each debit and its reversal, newest first; the balance is back to the credit.
    const ledger = await client.get('/portal/ledger');
    const sellFen = 3044 + Number((await orderRow(api.app, sell.body.data.order_no)).service_fen);
    expect(ledgerLines(ledger.html)).toEqual([
      { orderNo: sell.body.data.order_no, refundNo: null, amount: `+${formatCny(sellFen)}` },
      { orderNo: sell.body.data.order_no, refundNo: null, amount: formatCny(-sellFen) },
      { orderNo: paid.order_no, refundNo: refund.body.data.refund_no, amount: '+¥20.44' },
      { orderNo: paid.order_no, refundNo: refund.body.data.refund_no, amount: '-¥20.44' },
      { orderNo: paid.order_no, refundNo: null, amount: '+¥198.80' },
    ]);
    expect(text(ledger.html)).toMatch(/Refused payout returned[\s\S]*Payout \(amount \+ fee\)[\s\S]*Failed refund returned[\s\S]*Refund[\s\S]*Order credited/);
    expect(text((await client.get('/portal')).html)).toMatch(/Available balance ¥198\.80/);
  });

  it("labels every page with the merchant's mode, and the developers page beside the api_key", async () => {
    const test = await merchantWithChannels(api.operator);
    const live = await api.operator.merchants.create({ name: 'live shop', mode: 'live' });
    const testClient = await inviteAndAccept(api.app, api.operator, test.merchant.id, email('test-mode'));
    const liveClient = await inviteAndAccept(api.app, api.operator, live.id, email('live-mode'));
    const mode = (html: string) => /id="merchant-mode"[^>]*>([^<]+)</.exec(html)?.[1] ?? null;
    for (const path of ['/portal', '/portal/orders', '/portal/ledger', '/portal/channels', '/portal/developers', '/portal/account']) {
      expect([path, mode((await testClient.get(path)).html)]).toEqual([path, 'Test mode']);
      expect([path, mode((await liveClient.get(path)).html)]).toEqual([path, 'Live mode']);
    }
    expect(mode((await testClient.get('/portal', { 'accept-language': 'zh-CN' })).html)).toBe('测试模式');
    expect(mode((await liveClient.get('/portal', { 'accept-language': 'zh-CN' })).html)).toBe('正式模式');
    const apiMode = (html: string) => /id="api-mode">([^<]+)</.exec(html)?.[1] ?? null;
    expect(apiMode((await testClient.get('/portal/developers')).html)).toBe('Test mode');
    expect(apiMode((await liveClient.get('/portal/developers')).html)).toBe('Live mode');
    // Signed out there is no merchant, so no mode.
    expect(mode((await new PortalClient(api.app).get('/portal/login')).html)).toBeNull();
  });
});
