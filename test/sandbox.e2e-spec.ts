import { createHmac } from 'node:crypto';
import { Redis } from 'ioredis';
import { Client as PgClient } from 'pg';
import { canonicalString } from '@app/signature';
import { ChannelAdapters, signSandboxNotification } from '@app/channels';
import { ChannelRepository, OrderRepository, TransitionRepository } from '@app/db';
import { QUEUE, unixSeconds } from '@app/common';
import { ORDER_TRANSITIONS, OrderLifecycle } from '@app/orders';
import { JobQueue } from '@app/queue';
import type { Credentials } from '@app/operator';
import { WorkerTuning } from '../apps/worker/src/worker-tuning';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { type CreatedOrder, createOrder, eventsOf, orderDetail, orderRow, sql } from './helpers/orders';

describe('sandbox checkout, notifications and the order state machine (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let merchant: Credentials;
  let channel: number;
  let lifecycle: OrderLifecycle;

  beforeAll(async () => {
    api = await startTestApi();
    const made = await merchantWithChannels(api.operator, { rate: '0.006', depositRate: '0.1' });
    merchant = made.merchant;
    channel = made.channels.processor;
    lifecycle = api.app.get(OrderLifecycle);
  });
  afterAll(() => api.close());

  async function newOrder(amount = '100.00', notifyUrl?: string): Promise<CreatedOrder & { token: string; id: string }> {
    const res = await createOrder(api.app, merchant, { cny_amount: amount, paychannel_id: channel, ...(notifyUrl ? { notify_url: notifyUrl } : {}) });
    expect(res.body.code).toBe(1);
    const token = new URL(res.body.data.pay_url!).searchParams.get('token')!;
    const row = await orderRow(api.app, res.body.data.order_no);
    return { ...res.body.data, token, id: row.id as string };
  }

  const page = (orderNo: string, token: string) => api.app.inject({ method: 'GET', url: `/sandbox/checkout/${orderNo}?token=${token}` });
  const press = (orderNo: string, button: 'pay' | 'fail', token: string) =>
    api.app.inject({
      method: 'POST',
      url: `/sandbox/checkout/${orderNo}/${button}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token }).toString(),
    });
  const notify = (params: object, channelId = channel) =>
    api.app.inject({
      method: 'POST',
      url: `/api/channel/notify/${channelId}`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(params),
    });

  async function secretKey(): Promise<string> {
    const adapters = api.app.get(ChannelAdapters);
    return adapters.channelConfig((await api.app.get(ChannelRepository).findById(channel))!).secret_key!;
  }

  it('shows a real checkout page: amount, merchant, two POST forms carrying the token', async () => {
    const order = await newOrder('12.34');
    const res = await page(order.order_no, order.token);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toContain('¥12.34');
    expect(res.body).toMatch(/<h1 class="merchant">m-[0-9a-f]{8}<\/h1>/);
    for (const action of ['pay', 'fail']) {
      const form = new RegExp(
        `<form method="post" action="/sandbox/checkout/${order.order_no}/${action}\\?lang=en">\\s*<input type="hidden" name="token" value="${order.token}">`,
      );
      expect(res.body).toMatch(form);
    }
    expect(res.body).not.toContain((await secretKey()).slice(0, 16));
  });

  it('speaks zh-CN and en like the portal: by Accept-Language, switchable, the choice carried through Pay', async () => {
    const order = await newOrder('8.80');
    const zh = await api.app.inject({
      method: 'GET',
      url: `/sandbox/checkout/${order.order_no}?token=${order.token}`,
      headers: { 'accept-language': 'zh-CN,zh;q=0.9,en;q=0.5' },
    });
    expect(zh.statusCode).toBe(200);
    expect(zh.body).toContain('<html lang="zh-CN">');
    expect(zh.body).toContain('沙箱收银台');
    expect(zh.body).toContain('使用支付宝支付 ¥8.80</button>');
    expect(zh.body).toContain('模拟付款失败</button>');
    const english = /<a href="([^"]+)" lang="en"/.exec(zh.body)![1].replace(/&amp;/g, '&');
    expect(english).toBe(`/sandbox/checkout/${order.order_no}?token=${order.token}&lang=en`);
    const en = await api.app.inject({ method: 'GET', url: english, headers: { 'accept-language': 'zh-CN' } });
    expect(en.body).toContain('<html lang="en">');
    expect(en.body).toContain('Sandbox checkout');
    expect(en.body).toContain(`action="/sandbox/checkout/${order.order_no}/pay?lang=en"`);

    const paid = await api.app.inject({
      method: 'POST',
      url: `/sandbox/checkout/${order.order_no}/pay?lang=zh-CN`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token: order.token }).toString(),
    });
    expect(paid.statusCode).toBe(200);
    expect(paid.body).toContain('支付成功');
    expect(paid.body).toMatch(/感谢您的付款：已向m-[0-9a-f]{8}支付 ¥8\.80。/);
    // Its switch leads back to the order's page, which a POST's answer is not.
    expect(paid.body).toContain(`href="/sandbox/checkout/${order.order_no}?token=${order.token}&amp;lang=en" lang="en"`);
    const notFound = await api.app.inject({ method: 'GET', url: `/sandbox/checkout/${order.order_no}?token=x&lang=zh-CN` });
    expect([notFound.statusCode, notFound.body.includes('此支付链接无效')]).toEqual([404, true]);
  });

  it("speaks the payer's words in every state, in English and Chinese: no stored status, no tester's note, no Pay on a closed order (issue 38)", async () => {
    /** What a person reads: the title and the body's text, without markup. */
    const read = (html: string) =>
      html
        .replace(/<style[\s\S]*?<\/style>/g, '')
        .replace(/<[^>]+>/g, ' ')
        .replace(/&amp;/g, '&')
        .replace(/&#39;/g, "'")
        .replace(/\s+/g, ' ')
        .trim();
    const as = (lang: 'en' | 'zh-CN', res: { body: string }) => ({ lang, text: read(res.body), html: res.body });
    const pageIn = (order: { order_no: string; token: string }, lang: 'en' | 'zh-CN') =>
      api.app.inject({ method: 'GET', url: `/sandbox/checkout/${order.order_no}?token=${order.token}&lang=${lang}` });
    const pressIn = (order: { order_no: string; token: string }, button: 'pay' | 'fail', lang: 'en' | 'zh-CN') =>
      api.app.inject({
        method: 'POST',
        url: `/sandbox/checkout/${order.order_no}/${button}?lang=${lang}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ token: order.token }).toString(),
      });
    const open = await newOrder('6.60');
    const failed = await newOrder('6.70');
    const paid = await newOrder('6.80');
    const closed = await newOrder('6.90');
    const expired = await newOrder('7.00');
    const late = await newOrder('7.10');
    expect((await press(paid.order_no, 'pay', paid.token)).statusCode).toBe(200);
    expect((await post(api.app, '/api/merchant/orderClose', signed(merchant, { order_no: closed.order_no }))).body.code).toBe(1);
    await sql(api.app).query(`UPDATE "orders" SET "expires_at" = now() - interval '1 second' WHERE "id" = ANY($1)`, [[expired.id, late.id]]);
    await lifecycle.expireOverdue();
    // late: its time ran out but the expiry pass has not cancelled it yet; the page already says so, and Pay is refused.
    await sql(api.app).query(`UPDATE "orders" SET "status" = 'pending', "updated_at" = "created_at" WHERE "id" = $1`, [late.id]);

    for (const lang of ['en', 'zh-CN'] as const) {
      const pages = {
        open: as(lang, await pageIn(open, lang)),
        failed: as(lang, await pressIn(failed, 'fail', lang)),
        paid: as(lang, await pageIn(paid, lang)),
        closed: as(lang, await pageIn(closed, lang)),
        expired: as(lang, await pageIn(expired, lang)),
        late: as(lang, await pressIn(late, 'pay', lang)),
      };
      for (const [state, { text, html }] of Object.entries(pages)) {
        // No stored status (pending, cancelled...) nor a "Status" line; no note about what the buttons send.
        expect([lang, state, text.match(/\b(pending|confirmed|completed|cancelled)\b|Status|状态|待支付|已取消|notification|通知/g)]).toEqual([
          lang,
          state,
          null,
        ]);
        expect([lang, state, html.includes('class="note"') && /Pay and Fail|支付”和“/.test(html)]).toEqual([lang, state, false]);
        // The test-mode banner stays: the payer is a tester.
        expect([lang, state, (lang === 'en' ? /Sandbox checkout ?: a test payment/ : /沙箱收银台 ?：测试付款/).test(text)]).toEqual([lang, state, true]);
      }
      const words =
        lang === 'en'
          ? {
              pay: 'Pay ¥6.60 with Alipay',
              fail: 'Simulate a failed payment',
              failed: 'Payment failed Nothing was paid. You can try again.',
              paid: 'Payment succeeded Thank you: ¥6.80 to',
              closed: 'This order is closed It was not paid, and it can no longer be paid.',
              expired: 'The time to pay has run out It was not paid, and it can no longer be paid.',
              payTitle: /<title>Pay m-[0-9a-f]{8}<\/title>/,
            }
          : {
              pay: '使用支付宝支付 ¥6.60',
              fail: '模拟付款失败',
              failed: '付款未成功 本次没有扣款，您可以重新付款。',
              paid: '支付成功 感谢您的付款：已向',
              closed: '此订单已关闭 此订单未付款，现已无法付款。',
              expired: '付款时间已过 此订单未付款，现已无法付款。',
              payTitle: /<title>向 m-[0-9a-f]{8} 付款<\/title>/,
            };
      expect(pages.open.text).toContain(words.pay);
      expect(pages.open.text).toContain(words.fail);
      expect(pages.open.html).toMatch(words.payTitle);
      // After a failed attempt: what happened, then Pay and Fail again on the same order.
      expect(pages.failed.text).toContain(words.failed);
      expect(pages.failed.html).toContain(`action="/sandbox/checkout/${failed.order_no}/pay?lang=${lang}"`);
      expect(pages.paid.text).toContain(words.paid);
      expect(pages.closed.text).toContain(words.closed);
      expect(pages.expired.text).toContain(words.expired);
      expect(pages.late.text).toContain(words.expired);
      for (const state of ['paid', 'closed', 'expired', 'late'] as const) {
        // Nothing offered to pay, and no title or heading asking to pay.
        expect([lang, state, pages[state].html.includes('<form'), words.payTitle.test(pages[state].html)]).toEqual([lang, state, false, false]);
      }
    }
    // The press on the out-of-time order was refused, not sent: it is still unpaid.
    expect((await orderRow(api.app, late.order_no)).status).toBe('pending');
    expect((await pressIn(late, 'pay', 'en')).statusCode).toBe(409);
  });

  it('cannot be framed and sends the security headers of an HTML page, on every answer of its routes', async () => {
    const order = await newOrder('3.00');
    for (const res of [await page(order.order_no, order.token), await page(order.order_no, 'x'), await press(order.order_no, 'fail', order.token)]) {
      expect(res.headers['x-frame-options']).toBe('DENY');
      const csp = String(res.headers['content-security-policy']);
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("form-action 'self'");
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      // The page's URL carries its token: no Referer may take it elsewhere.
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });

  it('answers a wrong token, another order or a bad order number with a 404 page, not a 500 or an envelope', async () => {
    const a = await newOrder();
    const b = await newOrder();
    for (const res of [
      await page(a.order_no, b.token),
      await page(a.order_no, 'x'),
      await api.app.inject({ method: 'GET', url: `/sandbox/checkout/${a.order_no}` }),
      await page('123', a.token),
      await press(a.order_no, 'pay', b.token),
      await api.app.inject({ method: 'POST', url: `/sandbox/checkout/${a.order_no}/pay` }),
    ]) {
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    }
    expect((await orderRow(api.app, a.order_no)).status).toBe('pending');
  });

  it("pay -> paid (order.paid) -> confirmed -> completed (order.completed) in the notification's transaction, crediting the balance once, no confirm job", async () => {
    const before = await api.operator.ledger.balance(merchant.id);
    // An address: its deliveries are pending and order.paid's has its job (without one they are no_address, SPEC 7 Address).
    const order = await newOrder('100.00', 'https://shop.example/notify');
    const res = await press(order.order_no, 'pay', order.token);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('Payment succeeded');

    // The sandbox's signed notification is its final word (SPEC 5): settled by the time the page answers.
    const row = await orderRow(api.app, order.order_no);
    expect(row).toMatchObject({ status: 'completed', late_payment: false, channel_trade_no: `SBX${order.order_no}` });
    expect(row.paid_at).not.toBeNull();
    const events = await eventsOf(api.app, order.order_no);
    expect(events.map((e) => e.type)).toEqual(['order.paid', 'order.completed']);
    expect(events.map((e) => e.deliveries)).toEqual([1, 1]);
    expect(Object.keys(events[0].payload).sort()).toEqual(
      [
        'cny_amount',
        'createtime',
        'event',
        'event_id',
        'merchant_actual_amount',
        'merchant_order_no',
        'order_no',
        'order_type',
        'paid_at',
        'service_amount',
        'service_rate',
        'status',
        'updatetime',
      ].sort(),
    );
    expect(events[0].payload).toMatchObject({
      event: 'order.paid',
      order_no: order.order_no,
      status: 'paid',
      order_type: 1,
      cny_amount: '100.00',
      merchant_actual_amount: 8946,
      service_rate: '0.00600000',
      service_amount: 60,
    });
    expect(typeof events[0].payload.paid_at).toBe('number');

    // order.paid's delivery has its callback job (job id = delivery id); order.completed's waits for
    // order.paid's to end (SPEC 7 Order); no confirm job was queued.
    const jobs = api.app.get(JobQueue);
    const deliveries = await sql(api.app).query(
      `SELECT d."id", d."status", d."next_attempt_at" <= now() AS "due" FROM "callback_deliveries" d JOIN "order_events" e ON e."id" = d."event_id" WHERE e."order_id" = $1 ORDER BY e."seq"`,
      [order.id],
    );
    expect(deliveries).toEqual([
      { id: expect.any(String), status: 'pending', due: true },
      { id: expect.any(String), status: 'pending', due: true },
    ]);
    expect(await jobs.queue(QUEUE.callbacks).getJob(deliveries[0].id)).toBeDefined();
    expect(await jobs.queue(QUEUE.callbacks).getJob(deliveries[1].id)).toBeUndefined();
    expect(await jobs.queue(QUEUE.orders).getJob(`confirm-${order.id}`)).toBeUndefined();
    expect(events[1].payload).toMatchObject({ status: 'completed', event: 'order.completed' });
    expect((await orderDetail(api.app, merchant, order.order_no)).body.data.status).toBe('completed');

    const after = await api.operator.ledger.balance(merchant.id);
    expect(after.available_fen - before.available_fen).toBe(8946);
    expect(after.deposit_fen - before.deposit_fen).toBe(994);

    // Once: confirming again, or more notifications, change nothing.
    await lifecycle.confirm(order.id);
    expect((await notify(signSandboxNotification(await secretKey(), order.order_no, 10000, 'paid'))).body).toBe('success');
    await lifecycle.confirm(order.id);
    expect(await api.operator.ledger.balance(merchant.id)).toEqual(after);
    expect((await eventsOf(api.app, order.order_no)).length).toBe(2);
    const ledger = await sql(api.app).query(`SELECT "kind", "amount_fen" FROM "ledger_entries" WHERE "order_id" = $1 ORDER BY "kind"`, [order.id]);
    expect(ledger).toEqual([
      { kind: 'order_credit', amount_fen: '8946' },
      { kind: 'order_deposit', amount_fen: '994' },
    ]);
    // The page of a finished order shows no buttons.
    const done = await page(order.order_no, order.token);
    expect(done.body).not.toContain('<form');
    expect((await press(order.order_no, 'pay', order.token)).statusCode).toBe(409);
  });

  it('a Pay makes four PostgreSQL round trips and two Redis commands: the settlement is one statement, no BEGIN or COMMIT (issue 20)', async () => {
    // The first Pay of the channel fills this process's channel row cache; the second is measured. Both with an
    // address, so order.paid's delivery gets its job (without one it is no_address: no job, no command).
    const warm = await newOrder('1.00', 'https://shop.example/notify');
    expect((await press(warm.order_no, 'pay', warm.token)).statusCode).toBe(200);
    const order = await newOrder('2.00', 'https://shop.example/notify');
    const statements: string[] = [];
    let redisCommands = 0;
    const pgQuery = PgClient.prototype.query as (...args: unknown[]) => unknown;
    const sendCommand = Redis.prototype.sendCommand;
    (PgClient.prototype as unknown as { query: (...args: unknown[]) => unknown }).query = function (this: PgClient, ...args: unknown[]) {
      const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text: string }).text;
      // The notification listener's liveness check runs on its own connection, on its own clock.
      if (text !== 'SELECT 1') statements.push(text.replace(/\s+/g, ' ').trim());
      return pgQuery.apply(this, args);
    };
    Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
      redisCommands++;
      return sendCommand.apply(this, args);
    };
    try {
      expect((await press(order.order_no, 'pay', order.token)).statusCode).toBe(200);
    } finally {
      (PgClient.prototype as unknown as { query: unknown }).query = pgQuery;
      Redis.prototype.sendCommand = sendCommand;
    }
    // The checkout read, the sandbox's bill line, the notification route's order read, the settlement; then order.paid's job.
    expect(statements.map((t) => /^(SELECT|INSERT) .*?(?:FROM|INTO) "(\w+)"/.exec(t)?.slice(1).join(' ') ?? t)).toEqual([
      'SELECT orders',
      'INSERT sandbox_bill_lines',
      'SELECT orders',
      'SELECT settle_order',
    ]);
    // Its key's admission (SPEC 7: due work taken fairly across keys, issue 36), then order.paid's job.
    expect(redisCommands).toBe(2);
    // The statement's payloads carry the settled row's times (set in SQL) and the rest as orderEventPayload made it.
    const row = await orderRow(api.app, order.order_no);
    expect(row.status).toBe('completed');
    const times = { updatetime: unixSeconds(row.updated_at as Date), paid_at: unixSeconds(row.paid_at as Date) };
    const events = await eventsOf(api.app, order.order_no);
    expect(events.map((e) => [e.type, e.payload.status, e.payload.updatetime, e.payload.paid_at, e.payload.order_no, e.payload.cny_amount])).toEqual([
      ['order.paid', 'paid', times.updatetime, times.paid_at, order.order_no, '2.00'],
      ['order.completed', 'completed', times.updatetime, times.paid_at, order.order_no, '2.00'],
    ]);
  });

  it('Fail is a failed attempt, not a transition: the order stays pending and payable, payment.attempt_failed is recorded without a callback; Pay then pays it (SPEC 5, issue 38)', async () => {
    const before = await api.operator.ledger.balance(merchant.id);
    const order = await newOrder('5.00', 'https://shop.example/notify');
    const res = await press(order.order_no, 'fail', order.token);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('Payment failed');
    expect(await orderRow(api.app, order.order_no)).toMatchObject({ status: 'pending', paid_at: null, late_payment: false });
    const events = await eventsOf(api.app, order.order_no);
    expect(events.map((e) => [e.type, e.payload.status, e.deliveries])).toEqual([['payment.attempt_failed', 'pending', 0]]);
    expect(events[0].payload).toMatchObject({ order_no: order.order_no, cny_amount: '5.00', channel_trade_no: `SBX${order.order_no}` });
    // Nothing for the merchant to hear yet: callbackResend has no event to send, orderQueryDetail still says pending.
    expect((await post(api.app, '/api/merchant/callbackResend', signed(merchant, { order_no: order.order_no }))).body.code).toBe(40400);
    expect((await orderDetail(api.app, merchant, order.order_no)).body.data.status).toBe('pending');
    // The same pay_url still offers Pay; a second Fail is a second attempt.
    expect((await page(order.order_no, order.token)).body).toContain(`action="/sandbox/checkout/${order.order_no}/pay?lang=en"`);
    expect((await press(order.order_no, 'fail', order.token)).statusCode).toBe(200);

    const paid = await press(order.order_no, 'pay', order.token);
    expect([paid.statusCode, paid.body.includes('Payment succeeded')]).toEqual([200, true]);
    expect((await orderRow(api.app, order.order_no)).status).toBe('completed');
    const after = await eventsOf(api.app, order.order_no);
    expect(after.map((e) => [e.type, e.deliveries])).toEqual([
      ['payment.attempt_failed', 0],
      ['payment.attempt_failed', 0],
      ['order.paid', 1],
      ['order.completed', 1],
    ]);
    expect((await api.operator.ledger.balance(merchant.id)).available_fen - before.available_fen).toBe(447);
    // The merchant's order.paid, as the callback body says it (its delivery is the worker's: test/portal-browser sends it to a receiver).
    expect(after[2].payload).toMatchObject({ event: 'order.paid', status: 'paid', order_no: order.order_no });
  });

  it('ten concurrent Pay presses and notifications, repeats, and stray confirms: paid once, credited once, order.paid before order.completed', async () => {
    const before = await api.operator.ledger.balance(merchant.id);
    const order = await newOrder('50.00');
    const secret = await secretKey();
    const [presses, answers] = await Promise.all([
      Promise.all(Array.from({ length: 5 }, () => press(order.order_no, 'pay', order.token))),
      Promise.all(Array.from({ length: 10 }, () => notify(signSandboxNotification(secret, order.order_no, 5000, 'paid')))),
      Promise.all(Array.from({ length: 3 }, () => lifecycle.confirm(order.id))),
    ]);
    expect(answers.map((a) => [a.statusCode, a.body])).toEqual(Array(10).fill([200, 'success']));
    // A press that finds the order settled already is told so (409); none is refused.
    expect(presses.every((p) => p.statusCode === 200 || p.statusCode === 409)).toBe(true);
    expect((await notify(signSandboxNotification(secret, order.order_no, 5000, 'paid'))).body).toBe('success');
    await lifecycle.confirm(order.id);
    const events = await sql(api.app).query(`SELECT "type", "seq" FROM "order_events" WHERE "order_id" = $1 ORDER BY "seq"`, [order.id]);
    expect(events.map((e: { type: string }) => e.type)).toEqual(['order.paid', 'order.completed']);
    expect((await orderRow(api.app, order.order_no)).status).toBe('completed');
    const after = await api.operator.ledger.balance(merchant.id);
    // 5000 - 30 service = 4970; deposit 497; actual 4473.
    expect([after.available_fen - before.available_fen, after.deposit_fen - before.deposit_fen]).toEqual([4473, 497]);
    const ledger = await sql(api.app).query(`SELECT count(*)::int AS n FROM "ledger_entries" WHERE "order_id" = $1`, [order.id]);
    expect(ledger).toEqual([{ n: 2 }]);
  });

  it('refuses a forged or altered notification and a wrong amount, changing nothing', async () => {
    const order = await newOrder('8.00');
    const forged = signSandboxNotification('not-the-secret', order.order_no, 800, 'paid');
    const res = await notify(forged);
    expect([res.statusCode, res.json().code]).toEqual([401, 40102]);
    const altered = { ...signSandboxNotification(await secretKey(), order.order_no, 800, 'paid'), amount: '0.01' };
    expect((await notify(altered)).json().code).toBe(40102);
    const unsigned: Record<string, unknown> = { ...signSandboxNotification(await secretKey(), order.order_no, 800, 'paid') };
    delete unsigned.sign;
    expect((await notify(unsigned)).json().code).toBe(40102);
    // Signed by the channel but for another amount: refused (and recorded, see the next test).
    const wrongAmount = signSandboxNotification(await secretKey(), order.order_no, 799, 'paid');
    expect((await notify(wrongAmount)).json().code).toBe(40000);
    // Signed with this channel's secret but sent to another channel's route.
    const other = (await merchantWithChannels(api.operator)).channels.processor;
    expect((await notify(signSandboxNotification(await secretKey(), order.order_no, 800, 'paid'), other)).json().code).toBe(40102);
    expect((await notify({}, 999999)).json().code).toBe(40000);
    expect((await orderRow(api.app, order.order_no)).status).toBe('pending');
    expect((await eventsOf(api.app, order.order_no)).map((e) => e.type)).toEqual(['payment.amount_mismatch']);
  });

  it('a verified notification with another amount changes nothing, is recorded as payment.amount_mismatch and counted', async () => {
    const mismatches = async (): Promise<number> => {
      const text = (await api.app.inject({ method: 'GET', url: '/metrics' })).body;
      return Number(/^merchant_pay_payment_amount_mismatch_total (\d+)$/m.exec(text)?.[1] ?? NaN);
    };
    const before = await mismatches();
    const order = await newOrder('12.00');
    const res = await notify(signSandboxNotification(await secretKey(), order.order_no, 1199, 'paid'));
    expect([res.statusCode, res.json().code]).toEqual([400, 40000]);

    expect(await orderRow(api.app, order.order_no)).toMatchObject({ status: 'pending', paid_at: null });
    const events = await eventsOf(api.app, order.order_no);
    expect(events).toHaveLength(1);
    expect(events[0].type).toBe('payment.amount_mismatch');
    expect(events[0].payload).toMatchObject({
      event: 'payment.amount_mismatch',
      order_no: order.order_no,
      cny_amount: '12.00',
      notified_amount: '11.99',
      channel_trade_no: `SBX${order.order_no}`,
    });
    // Not a callback event: no delivery row, and callbackResend has nothing to send.
    const [{ count }] = await sql(api.app).query(
      `SELECT count(*)::int AS count FROM "callback_deliveries" d JOIN "orders" o ON o."id" = d."order_id" WHERE o."order_no" = $1`,
      [order.order_no],
    );
    expect(count).toBe(0);
    const resend = await post(api.app, '/api/merchant/callbackResend', signed(merchant, { order_no: order.order_no }));
    expect([resend.status, resend.body.code]).toEqual([404, 40400]);
    expect(await mismatches()).toBe(before + 1);

    // The right amount still pays it; the mismatch stays on record beside order.paid.
    expect((await notify(signSandboxNotification(await secretKey(), order.order_no, 1200, 'paid'))).body).toBe('success');
    expect((await eventsOf(api.app, order.order_no)).map((e) => e.type)).toEqual(['payment.amount_mismatch', 'order.paid', 'order.completed']);
    const latest = await post<{ event: string }>(api.app, '/api/merchant/callbackResend', signed(merchant, { order_no: order.order_no }));
    expect(latest.body.data.event).toBe('order.completed');
  });

  it('a notification for an unknown order is 40400', async () => {
    const res = await notify(signSandboxNotification(await secretKey(), '2099010100000000000000', 100, 'paid'));
    expect([res.statusCode, res.json().code]).toEqual([404, 40400]);
  });

  it('verifies what the sandbox signs: HMAC-SHA256 of the canonical string with the secret_key', async () => {
    const secret = await secretKey();
    const n = signSandboxNotification(secret, '2026010100000012345678', 100, 'paid');
    const { sign, ...fields } = n;
    expect(sign).toBe(createHmac('sha256', secret).update(canonicalString(fields)).digest('hex'));
  });

  it('expiry: createOrder queues no job; the expiry pass cancels only once expires_at passed, and only once', async () => {
    const order = await newOrder('3.00');
    const jobs = await api.app.get(JobQueue).queue(QUEUE.orders).getJobs(['waiting', 'delayed', 'prioritized']);
    expect(jobs.filter((j) => (j.data as { orderId?: string }).orderId === order.id)).toEqual([]);
    await lifecycle.expireOverdue();
    expect((await orderRow(api.app, order.order_no)).status).toBe('pending');
    await sql(api.app).query(`UPDATE "orders" SET "expires_at" = now() - interval '1 second' WHERE "id" = $1`, [order.id]);
    expect(await lifecycle.expireOverdue()).toBeGreaterThanOrEqual(1);
    await lifecycle.expireOverdue();
    const row = await orderRow(api.app, order.order_no);
    expect(row.status).toBe('cancelled');
    expect((await eventsOf(api.app, order.order_no)).map((e) => e.type)).toEqual(['order.cancelled']);
    // Its delivery is written like every other transition's: this merchant has no address, so it is no_address (SPEC 7 Address).
    const deliveries: { status: string; due: boolean }[] = await sql(api.app).query(
      `SELECT status, next_attempt_at <= now() AS due FROM callback_deliveries WHERE order_id = $1`,
      [order.id],
    );
    expect(deliveries).toEqual([{ status: 'no_address', due: true }]);
    // A page for it offers nothing to pay, and says why in the payer's words.
    const closed = (await page(order.order_no, order.token)).body;
    expect(closed).toContain('The time to pay has run out');
    expect(closed).not.toContain('<form');
  });

  /** Waits until the clock is past `unixSeconds`, so a transition made now lands in a later second. */
  async function pastSecond(unixSeconds: number): Promise<void> {
    // clock: the wait is for the wall clock's next second itself
    while (Math.floor(Date.now() / 1000) <= unixSeconds) await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
  }

  async function updatetime(orderNo: string, status: string): Promise<number> {
    const detail = (await orderDetail(api.app, merchant, orderNo)).body.data;
    expect(detail.status).toBe(status);
    return detail.updatetime as number;
  }

  it('updatetime strictly increases with every transition: expiry, late payment, confirmation, credit', async () => {
    const order = await newOrder('9.00');
    let last = await updatetime(order.order_no, 'pending');
    expect(last).toBe(order.createtime);
    const moves: [string, () => Promise<unknown>][] = [
      [
        'cancelled',
        async () => {
          await sql(api.app).query(`UPDATE "orders" SET "expires_at" = now() - interval '1 second' WHERE "id" = $1`, [order.id]);
          await lifecycle.expireOverdue();
        },
      ],
      // Paid as a channel whose word is not final (epay) leaves it, so each later step is a transition of its own.
      ['paid', () => lifecycle.markPaid(order.id, { amountFen: 900, channelTradeNo: `SBX${order.order_no}` }, { final: false })],
      // confirm() takes both steps at once: the first is made alone here, as confirm() makes it.
      ['confirmed', () => api.app.get(TransitionRepository).moveOrder(sql(api.app).manager, order.id, ORDER_TRANSITIONS.between('paid', 'confirmed'), {}, [])],
      ['completed', () => lifecycle.confirm(order.id)],
    ];
    for (const [status, move] of moves) {
      await pastSecond(last);
      await move();
      const now = await updatetime(order.order_no, status);
      expect([status, now > last]).toEqual([status, true]);
      last = now;
    }
    // Each event carries the updatetime of its own transition.
    const events = await eventsOf(api.app, order.order_no);
    expect(events.map((e) => e.type)).toEqual(['order.cancelled', 'order.paid', 'order.completed']);
    const times = events.map((e) => e.payload.updatetime as number);
    expect(times[0]).toBeGreaterThan(order.createtime);
    expect(times[1]).toBeGreaterThan(times[0]);
    expect(times[2]).toBe(last);
  });

  it('updatetime strictly increases on payment by notification and on cancellation by the channel, not on a failed attempt', async () => {
    // The sandbox's payment settles in its notification's transaction: paid and completed share one updatetime.
    const paid = await newOrder('9.50');
    await pastSecond(paid.createtime);
    await notify(signSandboxNotification(await secretKey(), paid.order_no, 950, 'paid'));
    expect(await updatetime(paid.order_no, 'completed')).toBeGreaterThan(paid.createtime);
    // The channel closing the unpaid trade (Alipay's TRADE_CLOSED) cancels it; a failed attempt (Fail) is no transition and leaves updatetime.
    const closed = await newOrder('9.50');
    await pastSecond(closed.createtime);
    await notify(signSandboxNotification(await secretKey(), closed.order_no, 950, 'failed'));
    expect(await updatetime(closed.order_no, 'pending')).toBe(closed.createtime);
    expect(await lifecycle.markClosedByChannel(closed.id)).toBe(true);
    expect(await updatetime(closed.order_no, 'cancelled')).toBeGreaterThan(closed.createtime);
  });

  it('a sell order (order_type 2) moves only by its payout: payment notifications and expiry leave it as it is', async () => {
    const order = await newOrder('11.00');
    await sql(api.app).query(
      `UPDATE "orders" SET "order_type" = 2, "deposit_fen" = 0, "merchant_actual_fen" = "cny_fen" + "service_fen", "expires_at" = now() - interval '1 second' WHERE "id" = $1`,
      [order.id],
    );
    expect((await notify(signSandboxNotification(await secretKey(), order.order_no, 1100, 'paid'))).json().code).toBe(40400);
    expect((await notify(signSandboxNotification(await secretKey(), order.order_no, 1100, 'failed'))).json().code).toBe(40400);
    await lifecycle.expireOverdue();
    // Whatever calls them, the top-up's moves never match a sell order.
    expect(await lifecycle.markPaid(order.id, { amountFen: 1100, channelTradeNo: 'X' }, { final: true })).toBe('unchanged');
    const sell = (await api.app.get(OrderRepository).findForChannel(channel, order.order_no))!;
    expect(await lifecycle.recordFailedAttempt(sell, { channelTradeNo: null })).toBe(false);
    expect(await orderRow(api.app, order.order_no)).toMatchObject({ status: 'pending', paid_at: null, late_payment: false });
    expect(await eventsOf(api.app, order.order_no)).toEqual([]);
  });

  it('a success notification after expiry counts as a late payment, flagged, and settles like any other', async () => {
    const before = await api.operator.ledger.balance(merchant.id);
    const order = await newOrder('4.00');
    await sql(api.app).query(`UPDATE "orders" SET "expires_at" = now() - interval '1 second' WHERE "id" = $1`, [order.id]);
    await lifecycle.expireOverdue();
    const res = await notify(signSandboxNotification(await secretKey(), order.order_no, 400, 'paid'));
    expect(res.body).toBe('success');
    expect(await orderRow(api.app, order.order_no)).toMatchObject({ status: 'completed', late_payment: true });
    expect((await eventsOf(api.app, order.order_no)).map((e) => e.type)).toEqual(['order.cancelled', 'order.paid', 'order.completed']);
    expect((await api.operator.ledger.balance(merchant.id)).available_fen - before.available_fen).toBe(358);
    // A failure notification after payment changes nothing, its history neither.
    expect((await notify(signSandboxNotification(await secretKey(), order.order_no, 400, 'failed'))).body).toBe('success');
    expect((await orderRow(api.app, order.order_no)).status).toBe('completed');
    expect((await eventsOf(api.app, order.order_no)).map((e) => e.type)).toEqual(['order.cancelled', 'order.paid', 'order.completed']);
  });

  it('sweep: re-queues confirmation of orders stuck in paid', async () => {
    const stuck = await newOrder('7.00');
    // Left paid as a channel whose word is not final (epay) leaves it, and then its confirm job lost.
    await lifecycle.markPaid(stuck.id, { amountFen: 700, channelTradeNo: `SBX${stuck.order_no}` }, { final: false });
    await sql(api.app).query(`UPDATE "orders" SET "updated_at" = now() - interval '1 hour' WHERE "id" = $1`, [stuck.id]);
    const result = await lifecycle.sweep(new WorkerTuning().stuckPaidSeconds);
    expect(result.confirmsQueued).toBeGreaterThanOrEqual(1);
    const jobs = await api.app.get(JobQueue).queue(QUEUE.orders).getJobs(['waiting', 'delayed', 'prioritized']);
    expect(jobs.some((j) => j.name === 'order.confirm' && j.data.orderId === stuck.id && j.id !== `confirm-${stuck.id}`)).toBe(true);
  });

  it('confirm of a pending or cancelled order does nothing; confirm of an unconfirmed payment throws for a retry', async () => {
    const order = await newOrder('2.00');
    await lifecycle.confirm(order.id);
    expect((await orderRow(api.app, order.order_no)).status).toBe('pending');
    // Paid without the sandbox having signed it (paid_at cleared): the channel does not confirm.
    await sql(api.app).query(`UPDATE "orders" SET "status" = 'paid' WHERE "id" = $1`, [order.id]);
    await expect(lifecycle.confirm(order.id)).rejects.toThrow(/channel answers unpaid/);
    expect((await orderRow(api.app, order.order_no)).status).toBe('paid');
  });
});
