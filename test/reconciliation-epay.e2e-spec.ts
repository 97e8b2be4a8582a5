import type { INestApplicationContext } from '@nestjs/common';
import { OrderLifecycle } from '@app/orders';
import type { Credentials } from '@app/operator';
import { type ReconService, shanghaiDate } from '@app/recon';
import { type TestApi, startTestApi } from './helpers/api';
import { FakeEpayGateway } from './fakes/epay-gateway';
import { orderRow } from './helpers/orders';
import { creditsOf, pendingOrder, startRecon } from './helpers/recon';

describe('reconciliation of an epay channel: a query per order of the day (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let merchant: Credentials;
  let recon: ReconService;
  let context: INestApplicationContext;
  let epay: FakeEpayGateway;
  let channel: number;
  const today = (): string => shanghaiDate(new Date());

  beforeAll(async () => {
    api = await startTestApi({ CHANNEL_ALLOW_HTTP: 'true' });
    epay = new FakeEpayGateway();
    const gateway = await epay.start();
    merchant = await api.operator.merchants.create({ name: 'epay recon shop' });
    ({ id: channel } = await api.operator.channels.create({
      category: 'remotepay',
      name: 'epay',
      payMethod: 'alipay,wxpay',
      adapter: 'epay',
      rate: '0.006',
      config: JSON.stringify({ merchant_no: epay.pid, secret_key: epay.key, gateway_url: gateway }),
    }));
    await api.operator.channels.link(merchant.id, channel);
    ({ recon, context } = await startRecon(api.config));
  });
  afterAll(async () => {
    await context?.close();
    await api?.close();
    await epay?.stop();
  });

  /** Paid on our side, as a verified notification would have done, and credited. */
  async function paidHere(orderNo: string): Promise<void> {
    const row = await orderRow(api.app, orderNo);
    expect(
      await api.app.get(OrderLifecycle).markPaid(String(row.id), { amountFen: Number(row.cny_fen), channelTradeNo: `EP${orderNo}` }, { final: false }),
    ).toBe('paid');
  }

  it('classifies each order from the gateway answers, picks up the lost payment once, and a re-run with the same answers is the same run', async () => {
    const both = await pendingOrder(api.app, merchant, channel, '10.00');
    const lost = await pendingOrder(api.app, merchant, channel, '20.00');
    const notThere = await pendingOrder(api.app, merchant, channel, '30.00');
    const otherAmount = await pendingOrder(api.app, merchant, channel, '40.00');
    const unpaid = await pendingOrder(api.app, merchant, channel, '50.00');
    for (const o of [both, notThere, otherAmount]) await paidHere(o);
    epay.paid.set(both, { money: '10.00', tradeNo: `EP${both}` });
    epay.paid.set(lost, { money: '20.00', tradeNo: `EP${lost}` });
    epay.paid.set(otherAmount, { money: '39.99', tradeNo: `EP${otherAmount}` });
    epay.asked.length = 0;

    const run = await recon.run(channel, today());
    const orderQueries = epay.asked.filter((q) => q.get('act') === 'order').map((q) => q.get('out_trade_no'));
    // One query per order of the day to build the bill, and the missing_local order asked once more before it moves.
    expect(orderQueries.sort()).toEqual([both, lost, lost, notThere, otherAmount, unpaid].sort());
    expect(run).toMatchObject({
      status: 'completed',
      bill_format: 'epay',
      counts: { matched: 2, missing_local: 1, status_mismatch: 1, amount_mismatch: 1, missing_channel: 0 },
    });
    const byOrder = Object.fromEntries(run.mismatches.map((m) => [m.order_no, m]));
    expect(byOrder[lost]).toMatchObject({ class: 'missing_local', resolution: 'moved_paid', bill_amount: '20.00' });
    expect(byOrder[notThere]).toMatchObject({ class: 'status_mismatch', our_status: 'paid' });
    expect(byOrder[otherAmount]).toMatchObject({ class: 'amount_mismatch', bill_amount: '39.99', our_amount: '40.00' });
    expect(JSON.stringify(run)).not.toContain(epay.key);

    expect((await orderRow(api.app, lost)).status).toBe('paid');
    await api.app.get(OrderLifecycle).confirm(String((await orderRow(api.app, lost)).id));
    expect(await creditsOf(api.app, lost)).toBe(1);

    const again = await recon.run(channel, today());
    expect(again).toMatchObject({ run_id: run.run_id, new_run: false, bill_sha256: run.bill_sha256 });
    expect(await creditsOf(api.app, lost)).toBe(1);
  });
});
