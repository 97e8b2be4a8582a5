import { randomBytes } from 'node:crypto';
import type { INestApplicationContext } from '@nestjs/common';
import { runCli } from '../apps/cli/src/main';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { MerchantClient } from '../examples/merchant-client';
import { FakeAlipayGateway, rsaKeyPair } from './fakes/alipay-gateway';
import { FakeWechatpayGateway } from './fakes/wechatpay-gateway';
import { type TestApi, startTestApi } from './helpers/api';
import { waitFor } from './helpers/callbacks';
import { openCashier } from './helpers/cashier';
import { freePort } from './helpers/free-port';
import { PortalClient, inviteAndAccept } from './helpers/portal';

/**
 * Issue 22's "done when": an operator creates an alipay and a wechatpay channel with the CLI,
 * links a live merchant, and the merchant takes a payment through each (the fakes stand in for
 * the providers) with the example client; the worker confirms it; the portal lists the channels
 * and never shows a config value.
 */
describe('a live merchant takes payments through Alipay and WeChat Pay with the example client', () => {
  let api: TestApi;
  let worker: INestApplicationContext;
  let alipay: FakeAlipayGateway;
  let wechat: FakeWechatpayGateway;
  let env: Record<string, string>;
  const alipayApp = rsaKeyPair();
  const wechatMerchantKey = rsaKeyPair();
  const apiV3Key = randomBytes(16).toString('hex');
  const secrets: string[] = [];

  async function cli(...argv: string[]): Promise<Record<string, unknown>> {
    let out = '';
    let err = '';
    const code = await runCli(argv, { env, stdout: (t) => (out += t), stderr: (t) => (err += t) });
    if (code !== 0) throw new Error(`${argv[0]} exited ${code}: ${err}`);
    return JSON.parse(out) as Record<string, unknown>;
  }

  beforeAll(async () => {
    const port = await freePort();
    api = await startTestApi({ CHANNEL_ALLOW_HTTP: 'true', PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
    await api.app.listen(port, '127.0.0.1');
    worker = await createWorkerApp(api.config, { shutdownHooks: false });
    env = { DATABASE_URL: api.databaseUrl, MASTER_KEY: api.config.masterKey.toString('base64'), CHANNEL_ALLOW_HTTP: 'true', LOG_LEVEL: 'silent' };
    alipay = await new FakeAlipayGateway('2021004100000002', alipayApp.publicKey).start();
    wechat = await new FakeWechatpayGateway(
      '1900000110',
      'wxd678efh567hg6788',
      '3775B6A45ACD588826D15E583A95F5DD2D5F7772',
      wechatMerchantKey.publicKey,
      apiV3Key,
    ).start();
    secrets.push(alipayApp.privateKey.split('\n')[1], wechatMerchantKey.privateKey.split('\n')[1], apiV3Key);
  });

  afterAll(async () => {
    await worker?.close();
    await api?.close();
    await alipay?.stop();
    await wechat?.stop();
  });

  it('creates the channels with the CLI, pays through each fake, and the portal lists them without their config', async () => {
    const merchant = (await cli('merchant:create', '--name', 'Live shop', '--mode', 'live')) as { id: number; api_key: string; api_secret: string };
    expect(merchant.api_key).toMatch(/^mk_live_/);
    const alipayConfig = {
      app_id: '2021004100000002',
      private_key: alipayApp.privateKey,
      alipay_public_key: alipay.platform.publicKey,
      gateway: alipay.gateway,
    };
    const wechatConfig = {
      mchid: '1900000110',
      appid: 'wxd678efh567hg6788',
      merchant_serial_no: '3775B6A45ACD588826D15E583A95F5DD2D5F7772',
      private_key: wechatMerchantKey.privateKey,
      apiv3_key: apiV3Key,
      platform_public_key: wechat.platform.publicKey,
      platform_public_key_id: wechat.publicKeyId,
      gateway: wechat.url,
    };
    const alipayChannel = (
      await cli(
        'channel:create',
        '--category',
        'processor',
        '--name',
        'Alipay live',
        '--pay-method',
        'alipay',
        '--adapter',
        'alipay',
        '--rate',
        '0.006',
        '--config',
        JSON.stringify(alipayConfig),
      )
    ).id as number;
    const wechatChannel = (
      await cli(
        'channel:create',
        '--category',
        'remotepay',
        '--name',
        'WeChat live',
        '--pay-method',
        'wxpay',
        '--adapter',
        'wechatpay',
        '--rate',
        '0.006',
        '--config',
        JSON.stringify(wechatConfig),
      )
    ).id as number;
    await cli('channel:link', '--merchant', String(merchant.id), '--channel', String(alipayChannel));
    await cli('channel:link', '--merchant', String(merchant.id), '--channel', String(wechatChannel));

    const client = new MerchantClient(`${api.config.publicBaseUrl}/api`, merchant.api_key, merchant.api_secret);
    const channels = await client.call<{ paychannel_id: number }[]>('getPayChannels');
    expect(channels.code).toBe(1);

    // Alipay: the payer follows pay_url, the service's cashier, to Alipay's page and presses Pay.
    const viaAlipay = await client.call<{ order_no: string; pay_url: string }>('createOrder', {
      order_type: 1,
      cny_amount: '12.34',
      paychannel_id: alipayChannel,
      paychannel_paymethod: 'alipay',
    });
    expect(viaAlipay.code).toBe(1);
    expect((await openCashier(viaAlipay.data.pay_url)).provider).toContain('<button>Pay</button>');
    expect((await fetch(`${alipay.url}/cashier/pay`, { method: 'POST', body: new URLSearchParams({ out_trade_no: viaAlipay.data.order_no }) })).status).toBe(
      200,
    );

    // WeChat Pay: the payer opens the cashier on a computer, which shows the Native trade's code_url, and scans it.
    const viaWechat = await client.call<{ order_no: string; pay_url: string }>('createOrder', {
      order_type: 1,
      cny_amount: '5.60',
      paychannel_id: wechatChannel,
      paychannel_paymethod: 'wxpay',
    });
    expect(viaWechat.code).toBe(1);
    const page = await fetch(viaWechat.data.pay_url);
    expect(page.status).toBe(200);
    expect(wechat.pay(viaWechat.data.order_no)).not.toBeNull();

    // The worker confirms each with the provider's query: both end completed, as the merchant reads them.
    for (const orderNo of [viaAlipay.data.order_no, viaWechat.data.order_no]) {
      await waitFor(
        async () => (await client.call<{ status: string }>('orderQueryDetail', { order_no: orderNo })).data?.status === 'completed',
        30_000,
        `${orderNo} completed`,
      );
    }
    expect(await api.operator.ledger.balance(merchant.id)).toMatchObject({ available_fen: 1234 - 7 + (560 - 3) });

    // The portal's channel page lists both by name; no key or config value appears.
    const portal = await inviteAndAccept(api.app, api.operator, merchant.id, `owner-${randomBytes(3).toString('hex')}@shop.example`, new PortalClient(api.app));
    const list = await portal.get('/portal/channels');
    expect(list.status).toBe(200);
    expect(list.html).toContain('Alipay live');
    expect(list.html).toContain('WeChat live');
    for (const secret of [...secrets, '2021004100000002', '1900000110', alipay.gateway, wechat.url]) expect(list.html).not.toContain(secret);
  }, 90_000);
});
