import { randomBytes } from 'node:crypto';
import type { INestApplicationContext } from '@nestjs/common';
import { ChannelError } from '@app/channels';
import type { Credentials } from '@app/operator';
import { type ReconService, shanghaiDate } from '@app/recon';
import { rsaKeyPair } from './fakes/alipay-gateway';
import { FakeWechatpayGateway } from './fakes/wechatpay-gateway';
import { type TestApi, startTestApi } from './helpers/api';
import { waitFor } from './helpers/callbacks';
import { openCashier } from './helpers/cashier';
import { freePort } from './helpers/free-port';
import { createOrder, orderRow } from './helpers/orders';
import { creditsOf, processedRefund, startRecon } from './helpers/recon';

const MCHID = '1900000188';
const APPID = 'wxd678efh567hg6999';
const SERIAL = '5157F09EFDC096DE15EBE81A47057A7232F1B8E1';

describe('reconciliation of a wechatpay channel: the tradebill downloaded from the gateway (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let merchant: Credentials;
  let recon: ReconService;
  let context: INestApplicationContext;
  const merchantKey = rsaKeyPair();
  const apiV3Key = randomBytes(16).toString('hex');
  const gateways: FakeWechatpayGateway[] = [];
  const today = (): string => shanghaiDate(new Date());

  beforeAll(async () => {
    const port = await freePort();
    // The fake posts its notifications to this API, listening on localhost.
    api = await startTestApi({ CHANNEL_ALLOW_HTTP: 'true', PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
    await api.app.listen(port, '127.0.0.1');
    merchant = await api.operator.merchants.create({ name: '微信 recon shop' });
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
  async function wechatChannel(): Promise<{ wechat: FakeWechatpayGateway; channel: number }> {
    const wechat = await new FakeWechatpayGateway(MCHID, APPID, SERIAL, merchantKey.publicKey, apiV3Key).start();
    gateways.push(wechat);
    const config = {
      mchid: MCHID,
      appid: APPID,
      merchant_serial_no: SERIAL,
      private_key: merchantKey.privateKey,
      apiv3_key: apiV3Key,
      platform_public_key: wechat.platform.publicKey,
      platform_public_key_id: wechat.publicKeyId,
      gateway: wechat.url,
    };
    const { id: channel } = await api.operator.channels.create({
      category: 'processor',
      name: 'WeChat Pay',
      payMethod: 'wxpay',
      adapter: 'wechatpay',
      rate: '0.006',
      config: JSON.stringify(config),
    });
    await api.operator.channels.link(merchant.id, channel);
    return { wechat, channel };
  }

  async function pendingOrder(channel: number, amount: string): Promise<string> {
    const res = await createOrder(api.app, merchant, { cny_amount: amount, paychannel_id: channel, paychannel_paymethod: 'wxpay' });
    expect(res.body.code).toBe(1);
    // The payer opens pay_url on a computer: the cashier opens the Native trade.
    await openCashier(res.body.data.pay_url!);
    return res.body.data.order_no;
  }

  /** Paid by scanning the code_url on the fake's page and notified: WeChat Pay's signed word settles it at once. */
  async function paidByScan(wechat: FakeWechatpayGateway, channel: number, amount: string): Promise<string> {
    const orderNo = await pendingOrder(channel, amount);
    const res = await fetch(`${wechat.url}/fake/scan-and-pay`, {
      method: 'POST',
      body: new URLSearchParams({ code_url: wechat.trades.get(orderNo)!.codeUrl }),
    });
    expect(res.status).toBe(200);
    const delivery = wechat.deliveries.at(-1)!;
    await waitFor(() => delivery.answers[0], 10_000, 'the notification answered');
    expect(delivery.answers[0].status).toBe(204);
    expect((await orderRow(api.app, orderNo)).status).toBe('completed');
    return orderNo;
  }

  it('a day the gateway and our books agree on: the signed tradebill query, the signed download, the hash checked, every line matched', async () => {
    const { wechat, channel } = await wechatChannel();
    const a = await paidByScan(wechat, channel, '100.00');
    await paidByScan(wechat, channel, '23.45');
    const refund = await processedRefund(api.app, merchant, a, '10.00');
    expect(refund.status).toBe('succeeded');

    const run = await recon.run(channel, today());
    const paths = wechat.calls.filter((c) => c.path.startsWith('/v3/bill')).map((c) => c.path.split('?')[0]);
    expect(paths).toEqual(['/v3/bill/tradebill', '/v3/billdownload/file']);
    expect(wechat.calls.find((c) => c.path.startsWith('/v3/bill/tradebill'))!.path).toBe(`/v3/bill/tradebill?bill_date=${today()}&bill_type=ALL&tar_type=GZIP`);
    expect(run).toMatchObject({
      status: 'completed',
      new_run: true,
      bill_format: 'wechatpay',
      bill_total: '113.45',
      our_total: '113.45',
      difference: '0.00',
      fees: '0.68',
    });
    expect(run.counts).toEqual({ matched: 3, missing_local: 0, missing_channel: 0, amount_mismatch: 0, status_mismatch: 0 });
    expect(JSON.stringify(run)).not.toContain(apiV3Key);

    expect(await recon.run(channel, today())).toMatchObject({ run_id: run.run_id, new_run: false, bill_sha256: run.bill_sha256 });
  });

  it('a payment the gateway took whose notification never came is missing_local, picked up and credited exactly once', async () => {
    const { wechat, channel } = await wechatChannel();
    await paidByScan(wechat, channel, '10.00');
    const lost = await pendingOrder(channel, '20.00');
    expect(wechat.pay(lost, { notify: 'never' })).toBeNull();

    const run = await recon.run(channel, today());
    expect(run.counts).toEqual({ matched: 1, missing_local: 1, missing_channel: 0, amount_mismatch: 0, status_mismatch: 0 });
    const transactionId = wechat.trades.get(lost)!.transactionId;
    expect(run.mismatches).toEqual([
      expect.objectContaining({ class: 'missing_local', order_no: lost, bill_amount: '20.00', resolution: 'moved_paid', channel_trade_no: transactionId }),
    ]);
    expect(await orderRow(api.app, lost)).toMatchObject({ status: 'completed', channel_trade_no: transactionId });
    expect(await creditsOf(api.app, lost)).toBe(1);

    expect(await recon.run(channel, today())).toMatchObject({ run_id: run.run_id, new_run: false });
    expect(await creditsOf(api.app, lost)).toBe(1);
  });

  it('a payment the bill carries at another amount is an amount_mismatch with its bill line, and nothing moves', async () => {
    const { wechat, channel } = await wechatChannel();
    const order = await paidByScan(wechat, channel, '50.00');
    wechat.editBill = (rows) => rows.map((r) => (r.orderNo === order ? { ...r, settled: '49.99', total: '49.99' } : r));
    const run = await recon.run(channel, today());
    expect(run.counts).toMatchObject({ matched: 0, amount_mismatch: 1 });
    expect(run.mismatches).toEqual([expect.objectContaining({ class: 'amount_mismatch', order_no: order, bill_amount: '49.99', our_amount: '50.00' })]);
    expect(run.mismatches[0].bill_line).toContain('49.99');
    expect(await creditsOf(api.app, order)).toBe(1);
  });

  it('a day without a trade has no bill (400 NO_STATEMENT_EXIST): the run completes with no lines, nothing downloaded', async () => {
    const { wechat, channel } = await wechatChannel();
    const run = await recon.run(channel, today());
    expect(run).toMatchObject({ status: 'completed', new_run: true, bill_total: '0.00', our_total: '0.00', difference: '0.00', error: null });
    expect(run.counts).toEqual({ matched: 0, missing_local: 0, missing_channel: 0, amount_mismatch: 0, status_mismatch: 0 });
    expect(wechat.calls.filter((c) => c.path.startsWith('/v3/bill')).map((c) => c.path.split('?')[0])).toEqual(['/v3/bill/tradebill']);
  });

  it('a channel that says it has no bill for a day we recorded a payment on: that payment is missing_channel', async () => {
    const { wechat, channel } = await wechatChannel();
    const order = await paidByScan(wechat, channel, '12.00');
    wechat.editBill = () => [];
    const run = await recon.run(channel, today());
    expect(run).toMatchObject({ status: 'completed', bill_total: '0.00', our_total: '12.00', difference: '-12.00' });
    expect(run.mismatches).toEqual([expect.objectContaining({ class: 'missing_channel', order_no: order, our_amount: '12.00' })]);
    expect(await creditsOf(api.app, order)).toBe(1);
  });

  it('a tradebill answer whose signature does not verify is refused before any download: no run, nothing moved', async () => {
    const { wechat, channel } = await wechatChannel();
    const lost = await pendingOrder(channel, '30.00');
    wechat.pay(lost, { notify: 'never' });
    wechat.api = 'bad-signature';
    await expect(recon.run(channel, today())).rejects.toThrow(ChannelError);
    expect(wechat.calls.filter((c) => c.path.startsWith('/v3/bill')).map((c) => c.path.split('?')[0])).toEqual(['/v3/bill/tradebill']);
    expect((await recon.show(today(), channel)).runs).toEqual([]);
    expect((await orderRow(api.app, lost)).status).toBe('pending');
  });

  it('a downloaded bill that does not match its hash_value is refused: the run is stored refused, nothing moved', async () => {
    const { wechat, channel } = await wechatChannel();
    const lost = await pendingOrder(channel, '40.00');
    wechat.pay(lost, { notify: 'never' });
    // Altered on the way: the same shape and a summary that agrees, only the hash tells.
    wechat.tamperDownload = (rows) => rows.map((r) => ({ ...r, settled: '4.00', total: '4.00' }));
    const run = await recon.run(channel, today());
    expect(run).toMatchObject({ status: 'refused', counts: {}, mismatches: [] });
    expect(run.error).toMatch(/hash_value/);
    expect((await orderRow(api.app, lost)).status).toBe('pending');
    expect(await creditsOf(api.app, lost)).toBe(0);
  });
});
