import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Client } from 'pg';
import type { AppConfig } from '@app/common';
import { type Credentials, OperatorModule } from '@app/operator';
import { MerchantClient, type Order, type Refund } from '../examples/merchant-client';
import { CallbackReceiver, flushQueueKeys, waitFor } from './helpers/callbacks';
import { testConfig } from './helpers/config';
import { createTestDatabase } from './helpers/database';
import { freePort } from './helpers/free-port';
import { type Running, launch, stopProcess } from './helpers/processes';
import { operatorServices } from './helpers/operator-services';

const API_MAIN = resolve(__dirname, '../dist/apps/api/src/main.js');
const WORKER_MAIN = resolve(__dirname, '../dist/apps/worker/src/main.js');
const CLI_MAIN = resolve(__dirname, '../dist/apps/cli/src/main.js');
const ACCOUNT = '6222021234561234';
const MASKED = '6222********1234';

/**
 * The done-when of money out, as an operator and a merchant live it: the compiled API and worker,
 * a test merchant with a sandbox channel per category (the demo's setup), the example client, the
 * sandbox checkout page, the operator CLI. Logs at debug level, so every line can be searched.
 */
describe('money out, end to end: a top-up paid on the sandbox page, partly refunded, then a payout', () => {
  const processes: Running[] = [];
  let config: AppConfig;
  let cli: INestApplicationContext;
  let db: Client;
  let receiver: CallbackReceiver;
  let merchant: Credentials;
  let channelIds: number[];
  let client: MerchantClient;
  let env: Record<string, string>;

  beforeAll(async () => {
    for (const main of [API_MAIN, WORKER_MAIN, CLI_MAIN]) if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first (npm test does)`);
    // Its callbacks go to receivers on this machine: the operator takes their 127.0.0.1 notify URLs (SPEC 7 Address).
    config = testConfig(await createTestDatabase(), { CALLBACK_ALLOW_PRIVATE: 'true' });
    cli = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
    const operator = operatorServices(cli);
    db = new Client({ connectionString: config.databaseUrl });
    await db.connect();
    receiver = await CallbackReceiver.start();
    merchant = await operator.merchants.create({ name: 'Demo shop', mode: 'test', notifyUrl: receiver.url });
    channelIds = [];
    for (const category of ['processor', 'remotepay', 'warehouse']) {
      const { id } = await operator.channels.create({
        category,
        name: `Sandbox ${category}`,
        payMethod: 'alipay,wxpay,bank',
        adapter: 'sandbox',
        rate: '0.006',
      });
      await operator.channels.link(merchant.id, id);
      channelIds.push(id);
    }
    const port = await freePort();
    env = {
      DATABASE_URL: config.databaseUrl,
      REDIS_URL: config.redisUrl!,
      MASTER_KEY: config.masterKey.toString('base64'),
      QUEUE_PREFIX: config.queuePrefix,
      CALLBACK_ALLOW_PRIVATE: 'true',
      SANDBOX_ENABLED: 'true',
      CALLBACK_RETRY_SCHEDULE: '1s,1s,2s',
      LOG_LEVEL: 'debug',
    };
    processes.push(launch('api', API_MAIN, { ...env, PORT: String(port) }), launch('worker', WORKER_MAIN, env));
    await waitFor(
      () =>
        fetch(`http://127.0.0.1:${port}/ready`).then(
          (r) => r.status === 200,
          () => false,
        ),
      30_000,
      'the API ready',
    );
    await waitFor(() => processes[1].output().includes('taking jobs'), 30_000, 'the worker taking jobs');
    client = new MerchantClient(`http://127.0.0.1:${port}/api`, merchant.api_key, merchant.api_secret);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => stopProcess(p)));
    await receiver?.close();
    await db?.end();
    await cli?.close();
    if (config) await flushQueueKeys(config.queuePrefix);
  }, 30_000);

  const operatorCli = (...argv: string[]): Promise<Record<string, unknown>> =>
    new Promise((done, fail) =>
      execFile(process.execPath, [CLI_MAIN, ...argv], { env: { PATH: process.env.PATH ?? '', ...env, LOG_LEVEL: 'silent' } }, (err, stdout, stderr) =>
        err ? fail(new Error(`${argv.join(' ')}: ${stderr}`)) : done(JSON.parse(stdout) as Record<string, unknown>),
      ),
    );
  const orderStatus = async (orderNo: string): Promise<Order['status'] | false> =>
    (await client.call<Order>('orderQueryDetail', { order_no: orderNo })).data.status;

  it('leaves merchant:balance equal to the sum of merchant:ledger, every movement delivered as a signed callback, no card number in any log line', async () => {
    // 1. A top-up, paid by pressing Pay on the sandbox's checkout page.
    const created = await client.call<{ order_no: string; pay_url: string }>('createOrder', {
      order_type: 1,
      cny_amount: '100.00',
      paychannel_id: channelIds[0],
      paychannel_paymethod: 'alipay',
    });
    expect(created.code).toBe(1);
    const orderNo = created.data.order_no;
    const page = await fetch(created.data.pay_url);
    expect(page.status).toBe(200);
    const token = new URL(created.data.pay_url).searchParams.get('token')!;
    const paid = await fetch(new URL(`/sandbox/checkout/${orderNo}/pay`, created.data.pay_url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }).toString(),
    });
    expect(await paid.text()).toContain('Payment succeeded');
    await waitFor(async () => (await orderStatus(orderNo)) === 'completed', 20_000, 'the top-up completed');

    // 2. Partly refunded.
    const refund = await client.refundCreate({ orderNo, refundAmount: '30.00', merchantRefundNo: 'demo-refund-1', reason: 'one item returned' });
    expect([refund.code, refund.data.status]).toEqual([1, 'processing']);
    await waitFor(async () => (await client.refundQuery({ merchantRefundNo: 'demo-refund-1' })).data.status === 'succeeded', 20_000, 'the refund succeeded');
    expect((await client.refundQueryList(orderNo)).data.list.map((r: Refund) => r.refund_no)).toEqual([refund.data.refund_no]);

    // 3. A payout, and one the channel refuses; a repeat with another card is refused without echoing it.
    const payout = await client.createSellOrder({
      cnyAmount: '50.00',
      paychannelId: channelIds[1],
      payeeName: '张三',
      payeeAccount: ACCOUNT,
      payeeBank: '中国工商银行',
      merchantOrderNo: 'demo-payout-1',
    });
    expect([payout.code, payout.data.payee_account, payout.data.merchant_actual_amount]).toEqual([1, MASKED, 5030]);
    const refused = await client.createSellOrder({
      cnyAmount: '1.44',
      paychannelId: channelIds[1],
      payeeName: '李四',
      payeeAccount: '6222029876543210',
      payeeBank: '中国银行',
    });
    expect(refused.code).toBe(1);
    const conflict = await client.createSellOrder({
      cnyAmount: '50.00',
      paychannelId: channelIds[1],
      payeeName: '张三',
      payeeAccount: '6222020000000000',
      payeeBank: '中国工商银行',
      merchantOrderNo: 'demo-payout-1',
    });
    expect(conflict.code).toBe(40900);
    expect(
      (await client.createSellOrder({ cnyAmount: '1.00', paychannelId: channelIds[1], payeeName: '张三', payeeAccount: `${ACCOUNT}-x`, payeeBank: 'x' })).code,
    ).toBe(40000);
    await waitFor(async () => (await orderStatus(payout.data.order_no)) === 'completed', 20_000, 'the payout completed');
    await waitFor(async () => (await orderStatus(refused.data.order_no)) === 'cancelled', 20_000, 'the refused payout cancelled');

    // 4. The operator's view: the balance is the sum of the ledger, line by line.
    const balance = await operatorCli('merchant:balance', '--merchant', String(merchant.id));
    const ledger = (await operatorCli('merchant:ledger', '--merchant', String(merchant.id))) as {
      entries: { kind: string; account: string; amount_fen: number; order_no: string; refund_no: string | null }[];
      totals: { available_fen: number; deposit_fen: number };
    };
    const sum = (account: string): number => ledger.entries.filter((e) => e.account === account).reduce((s, e) => s + e.amount_fen, 0);
    expect(balance).toEqual({ available_fen: sum('available'), deposit_fen: sum('deposit') });
    expect(ledger.totals).toEqual(balance);
    expect(balance.available_fen).toBe(9940 - 3000 - 5030);
    expect(ledger.entries.map((e) => [e.kind, e.amount_fen, e.order_no, e.refund_no]).reverse()).toEqual([
      ['order_credit', 9940, orderNo, null],
      ['order_deposit', 0, orderNo, null],
      ['refund_debit', -3000, orderNo, refund.data.refund_no],
      ['sell_debit', -5030, payout.data.order_no, null],
      ['sell_debit', -145, refused.data.order_no, null],
      ['sell_reversal', 145, refused.data.order_no, null],
    ]);

    // 5. Every event of the merchant delivered, in order per order, both signatures valid.
    const { rows: events } = await db.query<{ id: string; type: string; order_no: string }>(
      `SELECT e.id, e.type, o.order_no FROM order_events e JOIN orders o ON o.id = e.order_id WHERE e.merchant_id = $1 ORDER BY e.seq`,
      [merchant.id],
    );
    const typesOf = (no: string): string[] => events.filter((e) => e.order_no === no).map((e) => e.type);
    expect([typesOf(orderNo), typesOf(payout.data.order_no), typesOf(refused.data.order_no)]).toEqual([
      ['order.paid', 'order.completed', 'refund.succeeded'],
      ['order.paid', 'order.completed'],
      ['order.cancelled'],
    ]);
    expect(events).toHaveLength(6);
    await waitFor(() => events.every((e) => receiver.forEvent(e.id).length > 0), 20_000, 'every event delivered');
    for (const e of events) {
      const callback = receiver.forEvent(e.id)[0];
      expect(client.verifyCallbackBody(callback.body)).toBe(true);
      expect(client.verifyCallbackHeaders(callback.headers as Record<string, string>, callback.raw)).toBe(true);
      expect(callback.body).toMatchObject({ event: e.type, order_no: e.order_no });
    }
    const bodyOf = (type: string, no: string): Record<string, unknown> =>
      receiver.forEvent(events.find((e) => e.type === type && e.order_no === no)!.id)[0].body;
    expect(bodyOf('refund.succeeded', orderNo)).toMatchObject({
      refund_no: refund.data.refund_no,
      merchant_refund_no: 'demo-refund-1',
      refund_amount: '30.00',
      status: 'succeeded',
    });
    expect(bodyOf('order.cancelled', refused.data.order_no)).toMatchObject({ order_type: 2, status: 'cancelled', reason: 'refused' });

    // 6. The logs: plenty of lines, none with a card number in it.
    await Promise.all(processes.map((p) => stopProcess(p)));
    const output = processes.map((p) => p.output()).join('\n');
    expect(output).toContain('/api/merchant/createSellOrder');
    // Ids are fields of the line (STYLE 11), so a search by order_no finds it.
    const lines = output.split('\n').flatMap((line) => (line.startsWith('{') ? [JSON.parse(line) as Record<string, unknown>] : []));
    expect(lines).toContainEqual(expect.objectContaining({ order_no: refused.data.order_no, msg: 'payout refused; debit reversed' }));
    for (const account of [ACCOUNT, '6222029876543210', '6222020000000000']) expect(output).not.toContain(account);
    expect(JSON.stringify(receiver.received.map((c) => c.raw))).not.toContain(ACCOUNT);
  }, 90_000);
});
