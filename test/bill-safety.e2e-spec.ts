import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { type IncomingMessage, createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { resolve } from 'node:path';
import type { INestApplicationContext } from '@nestjs/common';
import { ChannelError } from '@app/channels';
import type { Credentials } from '@app/operator';
import { type ReconService, shanghaiDate } from '@app/recon';
import { FakeAlipayGateway, rsaKeyPair } from './fakes/alipay-gateway';
import { FakeWechatpayGateway } from './fakes/wechatpay-gateway';
import { type TestApi, startTestApi } from './helpers/api';
import { TEST_REDIS_URL } from './helpers/config';
import { waitFor } from './helpers/callbacks';
import { openCashier } from './helpers/cashier';
import { freePort } from './helpers/free-port';
import { createOrder, orderRow, sql } from './helpers/orders';
import { startRecon } from './helpers/recon';

const CLI_MAIN = resolve(__dirname, '../dist/apps/cli/src/main.js');
const PEAK_RSS = resolve(__dirname, 'helpers/report-peak-rss.cjs');
const APP_ID = '2021004100000064';
const MCHID = '1900006464';
const APPID = 'wx6464646464646464';
const SERIAL = '6464646464646464646464646464646464646464';
/** What a bomb here inflates to: sixteen times SPEC 6's cap. */
const BOMB_MIB = 1024;

/**
 * A CONNECT proxy standing in for the internet: a tunnel to Alipay's bill host reaches a bill host
 * that asks each fake gateway for the file (they are Alipay's to serve), anything else goes where
 * it was asked; every tunnel's target is kept.
 */
async function internet(alipays: FakeAlipayGateway[]): Promise<{ url: string; tunnels: string[]; stop: () => Promise<void> }> {
  const billHost = createServer((req, res) => {
    void (async () => {
      for (const alipay of alipays) {
        const answer = await fetch(`${alipay.url}${req.url ?? '/'}`);
        if (answer.status === 404) continue;
        return void res.writeHead(answer.status).end(Buffer.from(await answer.arrayBuffer()));
      }
      res.writeHead(404).end('file not found');
    })();
  });
  await new Promise<void>((done) => billHost.listen(0, '127.0.0.1', done));
  const tunnels: string[] = [];
  const sockets = new Set<{ destroy(): void }>();
  const server = createServer((_req, res) => res.writeHead(405).end());
  server.on('connect', (req: IncomingMessage, socket, head) => {
    tunnels.push(req.url ?? '');
    const [host, port] = (req.url ?? '').split(':');
    const upstream = host === 'dwbillcenter.alipay.com' ? connect((billHost.address() as AddressInfo).port, '127.0.0.1') : connect(Number(port), host);
    upstream.on('connect', () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    sockets.add(socket).add(upstream);
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tunnels,
    stop: async () => {
      server.closeAllConnections();
      billHost.closeAllConnections();
      for (const socket of sockets) socket.destroy();
      await new Promise((done) => billHost.close(() => done(undefined)));
      await new Promise((done) => server.close(() => done(undefined)));
    },
  };
}

/**
 * SPEC 6, bills: fetched only from the provider's own hosts within the link's lifetime, inflated
 * as a stream under 64 MiB (only the detail file of an Alipay zip); past the cap, a refused run.
 */
describe('bill downloads: pinned hosts, streaming inflate under the cap (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let merchant: Credentials;
  let recon: ReconService;
  let context: INestApplicationContext;
  let proxy: Awaited<ReturnType<typeof internet>>;
  const masterKey = randomBytes(32).toString('base64');
  const app = rsaKeyPair();
  const merchantKey = rsaKeyPair();
  const apiV3Key = randomBytes(16).toString('hex');
  const alipays: FakeAlipayGateway[] = [];
  const wechats: FakeWechatpayGateway[] = [];
  const today = (): string => shanghaiDate(new Date());

  beforeAll(async () => {
    const port = await freePort();
    api = await startTestApi({ CHANNEL_ALLOW_HTTP: 'true', PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, MASTER_KEY: masterKey });
    await api.app.listen(port, '127.0.0.1');
    merchant = await api.operator.merchants.create({ name: 'bill safety shop' });
    ({ recon, context } = await startRecon(api.config));
    proxy = await internet(alipays);
  });
  afterAll(async () => {
    await context?.close();
    await api?.close();
    for (const g of [...alipays, ...wechats]) await g.stop();
    await proxy?.stop();
  });

  /** A fake Alipay, a channel of its own reaching it through the proxy, and a payment on it today. */
  async function alipayDay(): Promise<{ alipay: FakeAlipayGateway; channel: number }> {
    const alipay = await new FakeAlipayGateway(APP_ID, app.publicKey).start();
    alipays.push(alipay);
    const { id: channel } = await api.operator.channels.create({
      category: 'processor',
      name: 'Alipay',
      payMethod: 'alipay',
      adapter: 'alipay',
      rate: '0.006',
      config: JSON.stringify({
        app_id: APP_ID,
        private_key: app.privateKey,
        alipay_public_key: alipay.platform.publicKey,
        gateway: alipay.gateway,
        proxy_url: proxy.url,
      }),
    });
    await api.operator.channels.link(merchant.id, channel);
    const res = await createOrder(api.app, merchant, { cny_amount: '6.40', paychannel_id: channel });
    await openCashier(res.body.data.pay_url!);
    const delivery = alipay.pay(res.body.data.order_no);
    await waitFor(() => delivery.answers[0], 10_000, 'the notification answered');
    // Alipay's own bill host, over plain http, as its answers name it.
    alipay.billLinkOrigin = 'http://dwbillcenter.alipay.com';
    return { alipay, channel };
  }

  async function wechatDay(): Promise<{ wechat: FakeWechatpayGateway; channel: number }> {
    const wechat = await new FakeWechatpayGateway(MCHID, APPID, SERIAL, merchantKey.publicKey, apiV3Key).start();
    wechats.push(wechat);
    const { id: channel } = await api.operator.channels.create({
      category: 'processor',
      name: 'WeChat Pay',
      payMethod: 'wxpay',
      adapter: 'wechatpay',
      rate: '0.006',
      config: JSON.stringify({
        mchid: MCHID,
        appid: APPID,
        merchant_serial_no: SERIAL,
        private_key: merchantKey.privateKey,
        apiv3_key: apiV3Key,
        platform_public_key: wechat.platform.publicKey,
        platform_public_key_id: wechat.publicKeyId,
        gateway: wechat.url,
      }),
    });
    await api.operator.channels.link(merchant.id, channel);
    const res = await createOrder(api.app, merchant, { cny_amount: '6.50', paychannel_id: channel, paychannel_paymethod: 'wxpay' });
    await openCashier(res.body.data.pay_url!);
    const delivery = wechat.pay(res.body.data.order_no)!;
    await waitFor(() => delivery.answers[0], 10_000, 'the notification answered');
    return { wechat, channel };
  }

  const runsOf = async (channel: number): Promise<{ status: string; error: string | null }[]> =>
    sql(api.app).query(`SELECT status, error FROM recon_runs WHERE channel_id = $1`, [channel]);

  it("an alipay bill on Alipay's own bill host over plain http is fetched (GBK zip names and all) and reconciled", async () => {
    const { alipay, channel } = await alipayDay();
    const report = await recon.run(channel, today());
    expect(report).toMatchObject({ status: 'completed', counts: { matched: 1 }, bill_total: '6.40' });
    expect(alipay.billDownloads).toBe(1);
    expect(proxy.tunnels).toContain('dwbillcenter.alipay.com:80');
  });

  it('an alipay bill link to any other host, http or https, is refused before any request leaves: no run', async () => {
    const { alipay, channel } = await alipayDay();
    for (const origin of [`http://localhost:${new URL(alipay.url).port}`, 'http://dwbillcenter.alipay.com.example.net', 'https://bills.example.com']) {
      alipay.billLinkOrigin = origin;
      const tunnels = proxy.tunnels.length;
      await expect(recon.run(channel, today())).rejects.toThrow(ChannelError);
      // The gateway's answer went through the proxy; nothing else did.
      expect(proxy.tunnels.slice(tunnels).every((t) => t === `127.0.0.1:${new URL(alipay.url).port}`)).toBe(true);
    }
    expect(alipay.billDownloads).toBe(0);
    expect(await runsOf(channel)).toEqual([]);
  });

  it('an alipay bill whose link expired is not a bill: no run', async () => {
    const { alipay, channel } = await alipayDay();
    alipay.billLinkLifetimeMs = -1;
    await expect(recon.run(channel, today())).rejects.toThrow(ChannelError);
    expect([alipay.billDownloads, (await runsOf(channel)).length]).toEqual([1, 0]);
  });

  it('an alipay zip whose detail file inflates past 64 MiB is a refused run; a bomb in the summary file is never inflated', async () => {
    const { alipay, channel } = await alipayDay();
    alipay.billOptions = { bomb: { file: 'detail', mib: BOMB_MIB } };
    const report = await recon.run(channel, today());
    expect(report).toMatchObject({ status: 'refused', counts: {} });
    expect(report.error).toMatch(/业务明细\.csv inflates past 64 MiB: refused/);
    expect((await orderRow(api.app, (await sql(api.app).query(`SELECT order_no FROM orders WHERE channel_id = $1`, [channel]))[0].order_no)).status).toBe(
      'completed',
    );

    const other = await alipayDay();
    other.alipay.billOptions = { bomb: { file: 'summary', mib: BOMB_MIB } };
    expect(await recon.run(other.channel, today())).toMatchObject({ status: 'completed', counts: { matched: 1 } });
  });

  it("the process reconciling a bomb stays far below what it inflates to (recon:run's peak memory, the worker's code)", async () => {
    const { alipay, channel } = await alipayDay();
    alipay.billOptions = { bomb: { file: 'detail', mib: BOMB_MIB } };
    const env = {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: api.databaseUrl,
      MASTER_KEY: masterKey,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: api.config.queuePrefix,
      LOG_LEVEL: 'silent',
      CHANNEL_ALLOW_HTTP: 'true',
    };
    const child = spawn(process.execPath, ['--require', PEAK_RSS, CLI_MAIN, 'recon:run', '--channel', String(channel), '--date', today()], { env });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((done) => child.once('exit', done));
    const peakMib = Number(/peak_rss_kib=(\d+)/.exec(err)?.[1]) / 1024;
    // The bomb inflates to 1024 MiB; the cap lets 64 MiB through before the run is refused.
    expect(peakMib).toBeLessThan(512);
    expect([code, JSON.parse(out)]).toEqual([0, expect.objectContaining({ status: 'refused' })]);
  });

  it('a wechatpay gzip bill that inflates past 64 MiB is a refused run', async () => {
    const { wechat, channel } = await wechatDay();
    wechat.billBombMib = BOMB_MIB;
    const report = await recon.run(channel, today());
    expect(report).toMatchObject({ status: 'refused' });
    expect(report.error).toMatch(/gzip\) inflates past 64 MiB: refused/);
  });

  it('a wechatpay download_url off the gateway or over plain http elsewhere is refused before any download: no run', async () => {
    const { wechat, channel } = await wechatDay();
    for (const origin of [`http://localhost:${new URL(wechat.url).port}`, 'https://api.mch.weixin.qq.com.example.net']) {
      wechat.downloadOrigin = origin;
      await expect(recon.run(channel, today())).rejects.toThrow(ChannelError);
    }
    expect(wechat.calls.filter((c) => c.path.startsWith('/v3/billdownload'))).toEqual([]);
    expect(await runsOf(channel)).toEqual([]);
    // On the gateway, with the BOM WeChat writes: read.
    wechat.downloadOrigin = null;
    expect(await recon.run(channel, today())).toMatchObject({ status: 'completed', counts: { matched: 1 } });
  });
});
