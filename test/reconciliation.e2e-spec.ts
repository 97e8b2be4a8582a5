import { randomBytes } from 'node:crypto';
import type { INestApplicationContext } from '@nestjs/common';
import { ChannelAdapters, signSandboxNotification } from '@app/channels';
import { ChannelRepository } from '@app/db';
import { OrderLifecycle } from '@app/orders';
import type { Credentials } from '@app/operator';
import { type ReconService, shanghaiDate } from '@app/recon';
import { ReconFigures } from '../apps/api/src/metrics/recon-figures';
import { runCli } from '../apps/cli/src/main';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { TEST_REDIS_URL } from './helpers/config';
import { eventsOf, orderRow } from './helpers/orders';
import { alipayTradeBill } from './fakes/alipay-bill';
import { wechatpayTradeBill } from './fakes/wechatpay-bill';
import { creditsOf, paidOnPage, pendingOrder, processedRefund, sandboxBook, startRecon } from './helpers/recon';

describe('reconciliation: a channel bill against our books (real PostgreSQL and Redis)', () => {
  const masterKey = randomBytes(32).toString('base64');
  let api: TestApi;
  let merchant: Credentials;
  let recon: ReconService;
  let context: INestApplicationContext;
  const today = (): string => shanghaiDate(new Date());

  beforeAll(async () => {
    api = await startTestApi({ MASTER_KEY: masterKey });
    merchant = (await merchantWithChannels(api.operator)).merchant;
    ({ recon, context } = await startRecon(api.config));
  });
  afterAll(async () => {
    await context?.close();
    await api?.close();
  });

  /** A sandbox channel of its own per test: its bill holds only what the test did. */
  async function newChannel(): Promise<number> {
    const { id } = await api.operator.channels.create({ category: 'processor', name: 'recon sandbox', payMethod: 'alipay', adapter: 'sandbox', rate: '0.006' });
    await api.operator.channels.link(merchant.id, id);
    return id;
  }

  /** One figure of the API's /metrics, refreshed from the stored runs first. */
  async function metric(line: string): Promise<number> {
    await api.app.get(ReconFigures).refresh();
    const text = (await api.app.inject({ method: 'GET', url: '/metrics' })).body;
    const found = text.split('\n').find((l) => l.startsWith(`${line} `));
    return Number(found?.split(' ')[1]);
  }

  it('a day the sandbox page and our books agree on: every line matched, totals equal; the same bill again is the same run', async () => {
    const channel = await newChannel();
    const a = await paidOnPage(api.app, merchant, channel, '100.00');
    await paidOnPage(api.app, merchant, channel, '50.00');
    const refund = await processedRefund(api.app, merchant, a.orderNo, '10.00');
    expect(refund.status).toBe('succeeded');

    const first = await recon.run(channel, today());
    expect(first).toMatchObject({ status: 'completed', new_run: true, bill_format: 'sandbox', bill_total: '140.00', our_total: '140.00', difference: '0.00' });
    expect(first.counts).toEqual({ matched: 3, missing_local: 0, missing_channel: 0, amount_mismatch: 0, status_mismatch: 0 });
    expect(first.mismatches).toEqual([]);
    expect(first.bill_sha256).toMatch(/^[0-9a-f]{64}$/);

    const again = await recon.run(channel, today());
    expect(again).toEqual({ ...first, new_run: false });
    expect((await recon.show(today(), channel)).runs).toHaveLength(1);
  });

  it('each class from an injected discrepancy; a changed bill makes a new run kept beside the first', async () => {
    const channel = await newChannel();
    const amountOff = await paidOnPage(api.app, merchant, channel, '20.00');
    const notOnBill = await paidOnPage(api.app, merchant, channel, '30.00');
    const refused = await paidOnPage(api.app, merchant, channel, '40.00');
    const lost = await pendingOrder(api.app, merchant, channel, '60.00');
    const failedRefund = await processedRefund(api.app, merchant, refused.orderNo, '1.44');
    expect(failedRefund.status).toBe('failed');

    await sandboxBook(api.app, `UPDATE "sandbox_bill_lines" SET "amount_fen" = 2001 WHERE "order_no" = $1`, [amountOff.orderNo]);
    await sandboxBook(api.app, `DELETE FROM "sandbox_bill_lines" WHERE "order_no" = $1`, [notOnBill.orderNo]);
    // The channel says it refunded what we recorded as failed; it took the lost order's money but its notification never came.
    await sandboxBook(
      api.app,
      `INSERT INTO "sandbox_bill_lines" ("channel_id", "kind", "trade_no", "order_no", "refund_no", "amount_fen") VALUES ($1, 'refund', 'SBXR1', $2, $3, 144)`,
      [channel, refused.orderNo, failedRefund.refund_no],
    );
    await sandboxBook(
      api.app,
      `INSERT INTO "sandbox_bill_lines" ("channel_id", "kind", "trade_no", "order_no", "amount_fen") VALUES ($1, 'pay', $2, $3, 6000)`,
      [channel, `SBX${lost}`, lost],
    );

    const before = await metric('recon_mismatches_total{kind="amount_mismatch"}');
    const run = await recon.run(channel, today());
    expect(run.counts).toEqual({ matched: 1, missing_local: 1, missing_channel: 1, amount_mismatch: 1, status_mismatch: 1 });
    expect(await metric('recon_mismatches_total{kind="amount_mismatch"}')).toBe(before + 1);
    const byClass = Object.fromEntries(run.mismatches.map((m) => [m.class, m]));
    expect(byClass.amount_mismatch).toMatchObject({ order_no: amountOff.orderNo, bill_amount: '20.01', our_amount: '20.00' });
    expect(byClass.amount_mismatch.bill_line).toContain(amountOff.orderNo);
    expect(byClass.missing_channel).toMatchObject({ order_no: notOnBill.orderNo, bill_amount: null, our_amount: '30.00', bill_line: null });
    expect(byClass.status_mismatch).toMatchObject({ kind: 'refund', refund_no: failedRefund.refund_no, our_status: 'failed' });
    expect(byClass.missing_local).toMatchObject({ order_no: lost, bill_amount: '60.00', resolution: 'moved_paid' });
    // Bill: 20.01 + 40 + 60 - 1.44; ours: 20 + 30 + 40 (the lost order was not ours when the lines were classified).
    expect([run.bill_total, run.our_total, run.difference]).toEqual(['118.57', '90.00', '28.57']);

    // The lost payment moved exactly as a late notification would: the sandbox's word is final, so
    // paid, confirmed and credited once in one transaction.
    expect((await orderRow(api.app, lost)).status).toBe('completed');
    expect(await creditsOf(api.app, lost)).toBe(1);

    // The channel corrects its bill: a new run beside the first, which stays as it was.
    await sandboxBook(api.app, `UPDATE "sandbox_bill_lines" SET "amount_fen" = 2000 WHERE "order_no" = $1`, [amountOff.orderNo]);
    const corrected = await recon.run(channel, today());
    expect(corrected.new_run).toBe(true);
    expect(corrected.run_id).not.toBe(run.run_id);
    expect(corrected.counts).toMatchObject({ amount_mismatch: 0, missing_local: 0, matched: 3 });
    const shown = await recon.show(today(), channel);
    expect(shown.runs.map((r) => r.run_id)).toEqual([run.run_id, corrected.run_id]);
    expect(shown.runs[0].counts.amount_mismatch).toBe(1);
    expect(await creditsOf(api.app, lost)).toBe(1);
  });

  it('missing_local credits once while the late notification arrives at the same moment', async () => {
    const channel = await newChannel();
    const secret = api.app.get(ChannelAdapters).channelConfig((await api.app.get(ChannelRepository).findById(channel))!).secret_key!;
    for (let round = 0; round < 3; round++) {
      const orderNo = await pendingOrder(api.app, merchant, channel, `7${round}.00`);
      await sandboxBook(
        api.app,
        `INSERT INTO "sandbox_bill_lines" ("channel_id", "kind", "trade_no", "order_no", "amount_fen") VALUES ($1, 'pay', $2, $3, $4)`,
        [channel, `SBX${orderNo}`, orderNo, (70 + round) * 100],
      );
      const notification = signSandboxNotification(secret, orderNo, (70 + round) * 100, 'paid');
      const [run, notified] = await Promise.all([
        recon.run(channel, today()),
        api.app.inject({
          method: 'POST',
          url: `/api/channel/notify/${channel}`,
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify(notification),
        }),
      ]);
      expect(notified.body).toBe('success');
      const line = run.mismatches.find((m) => m.order_no === orderNo);
      // Whichever came first moved it; the other changed nothing (or the run found it paid already: matched).
      if (line) expect(['moved_paid', 'already_moved']).toContain(line.resolution);
      expect((await eventsOf(api.app, orderNo)).map((e) => e.type)).toEqual(['order.paid', 'order.completed']);
      const id = String((await orderRow(api.app, orderNo)).id);
      await Promise.all([api.app.get(OrderLifecycle).confirm(id), api.app.get(OrderLifecycle).confirm(id)]);
      expect(await creditsOf(api.app, orderNo)).toBe(1);
    }
  });

  it('a truncated, corrupt or wrongly encoded bill is refused whole, with an alert; nothing of it applied', async () => {
    const channel = await newChannel();
    const lost = await pendingOrder(api.app, merchant, channel, '80.00');
    const good = [
      `# sandbox bill,channel=${channel},date=${today()}`,
      'trade_no,order_no,refund_no,kind,amount,fee,time',
      `SBX${lost},${lost},,pay,80.00,0.00,${today()} 10:00:00`,
      '# end,lines=1,net=80.00',
      '',
    ].join('\n');
    const refusedBefore = await metric('recon_bills_refused_total');
    const cases: [string, Buffer, RegExp][] = [
      ['truncated', Buffer.from(good.split('\n').slice(0, 3).join('\n')), /truncated/],
      ['summary disagrees', Buffer.from(good.replace('lines=1', 'lines=2')), /disagrees/],
      ['malformed line', Buffer.from(good.replace('80.00,0.00', 'eighty,0.00')), /line 3 is malformed/],
      ['not UTF-8', Buffer.concat([Buffer.from(good.slice(0, 20)), Buffer.from([0xc4, 0xe3, 0xba]), Buffer.from(good.slice(20))]), /not UTF-8/],
    ];
    for (const [, raw, error] of cases) {
      const run = await recon.run(channel, today(), { format: 'sandbox', raw });
      expect(run).toMatchObject({ status: 'refused', mismatches: [], counts: {} });
      expect(run.error).toMatch(error);
    }
    expect(await metric('recon_bills_refused_total')).toBe(refusedBefore + cases.length);
    expect((await orderRow(api.app, lost)).status).toBe('pending');
    // Well formed, the bill is read; but a bill alone moves nothing: the channel's query (its books have no such payment) decides.
    const run = await recon.run(channel, today(), { format: 'sandbox', raw: Buffer.from(good) });
    expect(run.mismatches).toMatchObject([{ class: 'missing_local', order_no: lost, resolution: 'channel_says_unpaid' }]);
    expect((await orderRow(api.app, lost)).status).toBe('pending');
  });

  it('an alipay bill (zip of GBK CSV, Chinese names) and a wechatpay bill (gzip, hash_value) of the same day reconcile line by line', async () => {
    const channel = await newChannel();
    const a = await paidOnPage(api.app, merchant, channel, '100.00');
    const b = await paidOnPage(api.app, merchant, channel, '0.01');
    const refund = await processedRefund(api.app, merchant, a.orderNo, '30.50');
    const time = `${today()} 12:00:00`;
    const alipay = alipayTradeBill(
      [
        { tradeNo: `A${a.orderNo}`, orderNo: a.orderNo, type: '交易', subject: '充值-张记小卖部', amount: '100.00', received: '100.00', fee: '-0.60', time },
        { tradeNo: `A${b.orderNo}`, orderNo: b.orderNo, type: '交易', subject: '会员充值', amount: '0.01', received: '0.01', fee: '0.00', time },
        {
          tradeNo: `A${a.orderNo}`,
          orderNo: a.orderNo,
          type: '退款',
          subject: '充值-张记小卖部',
          amount: '100.00',
          received: '-30.49',
          refundNo: String(refund.refund_no),
          fee: '0.18',
          time,
        },
      ],
      { date: today() },
    );
    const run = await recon.run(channel, today(), { format: 'alipay', raw: alipay });
    expect(run).toMatchObject({ status: 'completed', bill_format: 'alipay', bill_total: '69.52', our_total: '69.51', fees: '0.42', difference: '0.01' });
    expect(run.mismatches).toMatchObject([
      { class: 'amount_mismatch', kind: 'refund', refund_no: refund.refund_no, bill_amount: '30.49', our_amount: '30.50' },
    ]);
    expect(run.mismatches[0].bill_line).toContain('充值-张记小卖部');

    const wechat = wechatpayTradeBill(
      [
        { time, transactionId: `W${a.orderNo}`, orderNo: a.orderNo, state: 'SUCCESS', settled: '100.00', subject: '充值', fee: '0.60000', total: '100.00' },
        { time, transactionId: `W${b.orderNo}`, orderNo: b.orderNo, state: 'SUCCESS', settled: '0.01', subject: '充值', fee: '0.00006', total: '0.01' },
        {
          time,
          transactionId: `W${a.orderNo}`,
          orderNo: a.orderNo,
          state: 'REFUND',
          settled: '0.00',
          refundNo: String(refund.refund_no),
          refundAmount: '30.50',
          refundState: 'SUCCESS',
          subject: '充值',
          fee: '-0.18300',
          total: '0.00',
        },
      ],
      { gzip: true },
    );
    const matched = await recon.run(channel, today(), { format: 'wechatpay', raw: wechat.raw, digest: { type: wechat.hashType, value: wechat.hashValue } });
    expect(matched).toMatchObject({ status: 'completed', difference: '0.00', counts: { matched: 3, amount_mismatch: 0, missing_channel: 0 } });
    for (const raw of [wechat.raw, wechatpayTradeBill([], { gzip: true }).raw]) {
      const tampered = await recon.run(channel, today(), { format: 'wechatpay', raw, digest: { type: 'SHA1', value: 'f'.repeat(40) } });
      expect(tampered).toMatchObject({ status: 'refused', error: expect.stringContaining('hash_value'), mismatches: [] });
    }
    expect((await recon.show(today(), channel)).runs.map((r) => [r.bill_format, r.status])).toEqual([
      ['alipay', 'completed'],
      ['wechatpay', 'completed'],
      ['wechatpay', 'refused'],
    ]);
  });

  it('recon:run and recon:show print JSON; nothing of the channel config in them; bad input exits 2', async () => {
    const channel = await newChannel();
    await paidOnPage(api.app, merchant, channel, '12.34');
    const env = { DATABASE_URL: api.databaseUrl, MASTER_KEY: masterKey, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: api.config.queuePrefix, LOG_LEVEL: 'silent' };
    const cli = async (...argv: string[]) => {
      let out = '';
      let err = '';
      const code = await runCli(argv, { env, stdout: (t) => (out += t), stderr: (t) => (err += t) });
      return { code, out, err };
    };
    const ran = await cli('recon:run', '--channel', String(channel), '--date', today());
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.out)).toMatchObject({ channel_id: channel, status: 'completed', counts: { matched: 1 }, bill_total: '12.34' });
    const shown = await cli('recon:show', '--date', today(), '--channel', String(channel));
    expect(JSON.parse(shown.out).runs).toHaveLength(1);
    const secret = api.app.get(ChannelAdapters).channelConfig((await api.app.get(ChannelRepository).findById(channel))!).secret_key!;
    expect(ran.out + shown.out).not.toContain(secret);

    expect(await cli('recon:run', '--channel', String(channel), '--date', '2025-02-30')).toMatchObject({ code: 2, err: expect.stringContaining('--date') });
    expect(await cli('recon:run', '--channel', '999999', '--date', today())).toMatchObject({ code: 2, err: expect.stringContaining('no channel') });
    expect(await cli('recon:show')).toMatchObject({ code: 2 });
    expect(await cli('recon:run', '--channel', String(channel), '--date', today(), '--file', '/nonexistent/bill.csv', '--format', 'sandbox')).toMatchObject({
      code: 2,
      err: expect.stringContaining('cannot be read'),
    });
    expect(
      await cli('recon:run', '--channel', String(channel), '--date', today(), '--file', __filename, '--format', 'wechatpay', '--hash', 'nope'),
    ).toMatchObject({ code: 2, err: expect.stringContaining('--hash') });
    // A bill given by hand that is not one: refused, said so in the JSON.
    const refused = await cli(
      'recon:run',
      '--channel',
      String(channel),
      '--date',
      today(),
      '--file',
      __filename,
      '--format',
      'wechatpay',
      '--hash',
      `SHA1:${'0'.repeat(40)}`,
    );
    expect(JSON.parse(refused.out)).toMatchObject({ status: 'refused', error: expect.stringContaining('hash_value') });
  });
});
