import type { INestApplicationContext } from '@nestjs/common';
import { ChannelError } from '@app/channels';
import type { Credentials } from '@app/operator';
import { type ReconService, shanghaiDate } from '@app/recon';
import { FakeAlipayGateway, rsaKeyPair } from './fakes/alipay-gateway';
import { type TestApi, startTestApi } from './helpers/api';
import { waitFor } from './helpers/callbacks';
import { openCashier } from './helpers/cashier';
import { freePort } from './helpers/free-port';
import { orderRow } from './helpers/orders';
import { creditsOf, pendingOrder, processedRefund, startRecon } from './helpers/recon';

const APP_ID = '2021004100000077';

describe('reconciliation of an alipay channel: the trade bill downloaded from the gateway (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let merchant: Credentials;
  let recon: ReconService;
  let context: INestApplicationContext;
  const app = rsaKeyPair();
  const gateways: FakeAlipayGateway[] = [];
  const today = (): string => shanghaiDate(new Date());

  beforeAll(async () => {
    const port = await freePort();
    // The fake posts its notifications to this API, listening on localhost.
    api = await startTestApi({ CHANNEL_ALLOW_HTTP: 'true', PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
    await api.app.listen(port, '127.0.0.1');
    merchant = await api.operator.merchants.create({ name: 'alipay recon shop' });
    ({ recon, context } = await startRecon(api.config));
  });
  afterAll(async () => {
    await context?.close();
    await api?.close();
    for (const g of gateways) await g.stop();
  });
  afterEach(() => {
    for (const g of gateways) expect(g.rejected).toEqual([]);
  });

  /** A gateway and a channel of their own per test: the bill holds only what that test paid. */
  async function alipayChannel(): Promise<{ alipay: FakeAlipayGateway; channel: number }> {
    const alipay = await new FakeAlipayGateway(APP_ID, app.publicKey).start();
    gateways.push(alipay);
    const config = JSON.stringify({ app_id: APP_ID, private_key: app.privateKey, alipay_public_key: alipay.platform.publicKey, gateway: alipay.gateway });
    const { id: channel } = await api.operator.channels.create({
      category: 'processor',
      name: 'Alipay',
      payMethod: 'alipay',
      adapter: 'alipay',
      rate: '0.006',
      config,
    });
    await api.operator.channels.link(merchant.id, channel);
    return { alipay, channel };
  }

  /** createOrder, and the payer opens pay_url: the fake verifies our signature and opens the trade. */
  async function opened(channel: number, amount: string): Promise<string> {
    const orderNo = await pendingOrder(api.app, merchant, channel, amount);
    expect((await openCashier(String((await orderRow(api.app, orderNo)).pay_url))).provider).toContain('<button>Pay</button>');
    return orderNo;
  }

  /** Paid by pressing Pay on the fake's cashier page and notified: Alipay's signed word settles it at once. */
  async function paidOnPage(alipay: FakeAlipayGateway, channel: number, amount: string): Promise<string> {
    const orderNo = await opened(channel, amount);
    const res = await fetch(`${alipay.url}/cashier/pay`, { method: 'POST', body: new URLSearchParams({ out_trade_no: orderNo }) });
    expect(res.status).toBe(200);
    const delivery = alipay.deliveries.at(-1)!;
    await waitFor(() => delivery.answers[0], 10_000, 'the notification answered');
    expect(delivery.answers[0].body).toBe('success');
    expect((await orderRow(api.app, orderNo)).status).toBe('completed');
    return orderNo;
  }

  it('a day the cashier and our books agree on: the signed bill query, the zip downloaded, every line matched', async () => {
    const { alipay, channel } = await alipayChannel();
    const a = await paidOnPage(alipay, channel, '100.00');
    await paidOnPage(alipay, channel, '23.45');
    const refund = await processedRefund(api.app, merchant, a, '10.00');
    expect(refund.status).toBe('succeeded');

    const run = await recon.run(channel, today());
    expect(alipay.apiCalls.filter((c) => c.method === 'alipay.data.dataservice.bill.downloadurl.query').map((c) => c.biz)).toEqual([
      { bill_type: 'trade', bill_date: today() },
    ]);
    expect(run).toMatchObject({
      status: 'completed',
      new_run: true,
      bill_format: 'alipay',
      bill_total: '113.45',
      our_total: '113.45',
      difference: '0.00',
      fees: '0.68',
    });
    expect(run.counts).toEqual({ matched: 3, missing_local: 0, missing_channel: 0, amount_mismatch: 0, status_mismatch: 0 });
    expect(JSON.stringify(run)).not.toContain(app.privateKey.split('\n')[1]);

    // Alipay hands out a fresh URL each time; the same bill bytes are the same run.
    expect(await recon.run(channel, today())).toMatchObject({ run_id: run.run_id, new_run: false, bill_sha256: run.bill_sha256 });
  });

  it('a payment the cashier took whose notification never came is missing_local, picked up and credited exactly once', async () => {
    const { alipay, channel } = await alipayChannel();
    await paidOnPage(alipay, channel, '10.00');
    const lost = await opened(channel, '20.00');
    alipay.pay(lost, { notify: 'never' });
    expect((await orderRow(api.app, lost)).status).toBe('pending');

    const run = await recon.run(channel, today());
    expect(run.counts).toEqual({ matched: 1, missing_local: 1, missing_channel: 0, amount_mismatch: 0, status_mismatch: 0 });
    expect(run.mismatches).toEqual([
      expect.objectContaining({
        class: 'missing_local',
        order_no: lost,
        bill_amount: '20.00',
        resolution: 'moved_paid',
        channel_trade_no: alipay.trades.get(lost)!.tradeNo,
      }),
    ]);
    expect(run.mismatches[0].bill_line).toContain(lost);
    expect(await orderRow(api.app, lost)).toMatchObject({ status: 'completed', channel_trade_no: alipay.trades.get(lost)!.tradeNo });
    expect(await creditsOf(api.app, lost)).toBe(1);

    // The same bill again changes nothing: the earlier run answers, no second credit.
    expect(await recon.run(channel, today())).toMatchObject({ run_id: run.run_id, new_run: false });
    expect(await creditsOf(api.app, lost)).toBe(1);
  });

  it('a payment the bill carries at another amount is an amount_mismatch with its bill line, and nothing moves', async () => {
    const { alipay, channel } = await alipayChannel();
    const order = await paidOnPage(alipay, channel, '50.00');
    alipay.editBill = (rows) => rows.map((r) => (r.orderNo === order ? { ...r, amount: '49.99', received: '49.99' } : r));
    const run = await recon.run(channel, today());
    expect(run.counts).toMatchObject({ matched: 0, amount_mismatch: 1 });
    expect(run.mismatches).toEqual([expect.objectContaining({ class: 'amount_mismatch', order_no: order, bill_amount: '49.99', our_amount: '50.00' })]);
    expect(run.mismatches[0].bill_line).toContain('49.99');
    expect(await creditsOf(api.app, order)).toBe(1);
  });

  it('a day without a trade has no bill (isp.bill_not_exist): the run completes with no lines, a day with none of ours matches', async () => {
    const { alipay, channel } = await alipayChannel();
    const run = await recon.run(channel, today());
    expect(run).toMatchObject({ status: 'completed', new_run: true, bill_total: '0.00', our_total: '0.00', difference: '0.00', error: null });
    expect(run.counts).toEqual({ matched: 0, missing_local: 0, missing_channel: 0, amount_mismatch: 0, status_mismatch: 0 });
    expect(alipay.apiCalls.map((c) => c.method)).toEqual(['alipay.data.dataservice.bill.downloadurl.query']);
    expect(await recon.run(channel, today())).toMatchObject({ run_id: run.run_id, new_run: false });
  });

  it('a channel that says it has no bill for a day we recorded a payment on: that payment is missing_channel', async () => {
    const { alipay, channel } = await alipayChannel();
    const order = await paidOnPage(alipay, channel, '12.00');
    alipay.editBill = () => [];
    const run = await recon.run(channel, today());
    expect(run).toMatchObject({ status: 'completed', bill_total: '0.00', our_total: '12.00', difference: '-12.00' });
    expect(run.mismatches).toEqual([expect.objectContaining({ class: 'missing_channel', order_no: order, our_amount: '12.00' })]);
    expect(await creditsOf(api.app, order)).toBe(1);
  });

  it('a bill answer whose signature does not verify is refused: no run, nothing moved', async () => {
    const { alipay, channel } = await alipayChannel();
    const lost = await opened(channel, '30.00');
    alipay.pay(lost, { notify: 'never' });
    alipay.api = 'bad-signature';
    await expect(recon.run(channel, today())).rejects.toThrow(ChannelError);
    expect(alipay.apiCalls.map((c) => c.method)).toEqual(['alipay.data.dataservice.bill.downloadurl.query']);
    expect((await recon.show(today(), channel)).runs).toEqual([]);
    expect((await orderRow(api.app, lost)).status).toBe('pending');
  });
});
