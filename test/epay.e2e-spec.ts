import { createHash } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { ChannelAdapters, type ChannelAdapter } from '@app/channels';
import { OrderLifecycle } from '@app/orders';
import type { Credentials } from '@app/operator';
import { type TestApi, startTestApi } from './helpers/api';
import { createOrder, eventsOf, orderRow } from './helpers/orders';

const PID = '1001';
const KEY = 'epay-test-key-0123456789';

function md5Sign(params: Record<string, string>, key: string): string {
  const text = Object.keys(params)
    .filter((k) => k !== 'sign' && k !== 'sign_type' && params[k] !== '')
    .sort()
    .map((k) => `${k}=${params[k]}`)
    .join('&');
  return createHash('md5').update(text + key).digest('hex');
}

/** A small epay gateway: answers api.php?act=order from `paid`, or never answers when `hang`. */
class FakeEpay {
  server: Server;
  paid = new Map<string, { money: string; tradeNo: string }>();
  queries: URLSearchParams[] = [];
  hang = false;

  async start(): Promise<string> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? '/', 'http://fake');
      if (url.pathname !== '/api.php') return res.writeHead(404).end();
      this.queries.push(url.searchParams);
      if (this.hang) return;
      const q = url.searchParams;
      res.setHeader('content-type', 'application/json');
      if (q.get('act') !== 'order' || q.get('pid') !== PID || q.get('key') !== KEY) return res.end(JSON.stringify({ code: -1, msg: 'bad key' }));
      const paid = this.paid.get(q.get('out_trade_no') ?? '');
      res.end(
        JSON.stringify(
          paid
            ? { code: 1, msg: 'ok', trade_no: paid.tradeNo, out_trade_no: q.get('out_trade_no'), pid: PID, money: paid.money, status: 1 }
            : { code: 1, msg: 'ok', out_trade_no: q.get('out_trade_no'), pid: PID, money: '0.00', status: 0 },
        ),
      );
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A CONNECT proxy that counts the tunnels it opened. */
async function startProxy(): Promise<{ url: string; tunnels: () => number; stop: () => Promise<void> }> {
  let tunnels = 0;
  const server = createServer((_req, res) => res.writeHead(405).end());
  server.on('connect', (req: IncomingMessage, socket, head) => {
    tunnels++;
    const [host, port] = (req.url ?? '').split(':');
    const upstream = connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tunnels: () => tunnels,
    stop: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe('epay adapter against a fake epay gateway (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let merchant: Credentials;
  let epay: FakeEpay;
  let gateway: string;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  let channel: number;
  let proxiedChannel: number;

  async function epayChannel(config: Record<string, string>): Promise<number> {
    const { id } = await api.operator.createChannel({
      category: 'remotepay',
      name: 'epay',
      payMethod: 'alipay,wxpay',
      adapter: 'epay',
      rate: '0.006',
      config: JSON.stringify(config),
    });
    await api.operator.link(merchant.id, id);
    return id;
  }

  beforeAll(async () => {
    // The fake gateway speaks plain http on localhost.
    api = await startTestApi({ CHANNEL_ALLOW_HTTP: 'true' });
    epay = new FakeEpay();
    gateway = await epay.start();
    proxy = await startProxy();
    // epay moves real money: a live merchant (SPEC 5).
    merchant = await api.operator.createMerchant({ name: 'epay shop' });
    channel = await epayChannel({ merchant_no: PID, secret_key: KEY, gateway_url: `${gateway}/` });
    proxiedChannel = await epayChannel({ merchant_no: PID, secret_key: KEY, gateway_url: gateway, proxy_url: proxy.url });
  });
  afterAll(async () => {
    await api.close();
    await epay.stop();
    await proxy.stop();
  });
  afterEach(() => {
    api.app.get(ChannelAdapters).timeoutMs = 8000;
    epay.hang = false;
    jest.restoreAllMocks();
  });

  const notifyGet = (channelId: number, params: Record<string, string>) =>
    api.app.inject({ method: 'GET', url: `/api/channel/notify/${channelId}?${new URLSearchParams(params).toString()}` });

  function notification(orderNo: string, money: string, extra: Record<string, string> = {}): Record<string, string> {
    const params: Record<string, string> = {
      pid: PID,
      trade_no: `EP${orderNo.slice(-8)}`,
      out_trade_no: orderNo,
      type: 'alipay',
      name: `Top-up ${orderNo}`,
      money,
      trade_status: 'TRADE_SUCCESS',
      ...extra,
    };
    return { ...params, sign: md5Sign(params, KEY), sign_type: 'MD5' };
  }

  it('pay_url is the md5-signed submit.php URL', async () => {
    const res = await createOrder(api.app, merchant, { cny_amount: '100.00', paychannel_id: channel, paychannel_paymethod: 'wxpay' });
    expect(res.body.code).toBe(1);
    const url = new URL(res.body.data.pay_url!);
    expect(`${url.origin}${url.pathname}`).toBe(`${gateway}/submit.php`);
    const params = Object.fromEntries(url.searchParams);
    expect(params).toMatchObject({
      pid: PID,
      type: 'wxpay',
      out_trade_no: res.body.data.order_no,
      notify_url: `${api.config.publicBaseUrl}/api/channel/notify/${channel}`,
      return_url: api.config.publicBaseUrl,
      money: '100.00',
      sign_type: 'MD5',
    });
    expect(params.name).toBeTruthy();
    expect(params.sign).toBe(md5Sign(params, KEY));
    expect(res.body.data.pay_url).not.toContain(KEY);
  });

  it('notification (GET or POST) -> paid; query through the proxy confirms -> completed, credited once', async () => {
    const before = await api.operator.balance(merchant.id);
    const res = await createOrder(api.app, merchant, { cny_amount: '10.00', paychannel_id: proxiedChannel });
    const orderNo = res.body.data.order_no;
    const n = notification(orderNo, '10.00');
    const first = await notifyGet(proxiedChannel, n);
    expect([first.statusCode, first.body]).toEqual([200, 'success']);
    const again = await api.app.inject({
      method: 'POST',
      url: `/api/channel/notify/${proxiedChannel}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(n).toString(),
    });
    expect(again.body).toBe('success');
    const row = await orderRow(api.app, orderNo);
    expect(row).toMatchObject({ status: 'paid', channel_trade_no: n.trade_no });

    const lifecycle = api.app.get(OrderLifecycle);
    // The gateway does not know of the payment yet: confirm throws so the job retries.
    const tunnelsBefore = proxy.tunnels();
    await expect(lifecycle.confirm(row.id as string)).rejects.toThrow(/unpaid/);
    expect(proxy.tunnels()).toBeGreaterThan(tunnelsBefore);
    const query = epay.queries.at(-1)!;
    expect(Object.fromEntries(query)).toEqual({ act: 'order', pid: PID, key: KEY, out_trade_no: orderNo });

    epay.paid.set(orderNo, { money: '10.00', tradeNo: n.trade_no });
    await lifecycle.confirm(row.id as string);
    await lifecycle.confirm(row.id as string);
    expect((await orderRow(api.app, orderNo)).status).toBe('completed');
    expect((await eventsOf(api.app, orderNo)).map((e) => e.type)).toEqual(['order.paid', 'order.completed']);
    const after = await api.operator.balance(merchant.id);
    expect(after.available_fen - before.available_fen).toBe(1000 - 6);
  });

  it('refuses a bad sign, another pid, a non-success status, and a different amount', async () => {
    const res = await createOrder(api.app, merchant, { cny_amount: '9.00', paychannel_id: channel });
    const orderNo = res.body.data.order_no;
    const forged = { ...notification(orderNo, '9.00'), sign: md5Sign(notification(orderNo, '9.00'), 'wrong-key') };
    expect((await notifyGet(channel, forged)).json().code).toBe(40102);
    expect((await notifyGet(channel, notification(orderNo, '9.00', { pid: '2002' }))).json().code).toBe(40102);
    expect((await notifyGet(channel, notification(orderNo, '9.00', { trade_status: 'WAIT_BUYER_PAY' }))).json().code).toBe(40102);
    const tampered = { ...notification(orderNo, '9.00'), money: '0.01' };
    expect((await notifyGet(channel, tampered)).json().code).toBe(40102);
    const cheaper = await notifyGet(channel, notification(orderNo, '8.99'));
    expect([cheaper.statusCode, cheaper.json().code]).toEqual([400, 40000]);
    expect((await orderRow(api.app, orderNo)).status).toBe('pending');
  });

  it('a channel query that times out is a failure the job retries', async () => {
    const res = await createOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: channel });
    await notifyGet(channel, notification(res.body.data.order_no, '1.00'));
    const row = await orderRow(api.app, res.body.data.order_no);
    epay.hang = true;
    api.app.get(ChannelAdapters).timeoutMs = 300;
    const started = Date.now();
    await expect(api.app.get(OrderLifecycle).confirm(row.id as string)).rejects.toThrow(/timed out/);
    expect(Date.now() - started).toBeLessThan(3000);
    expect((await orderRow(api.app, res.body.data.order_no)).status).toBe('paid');
  });

  it('an unreachable proxy is a channel failure, not a hang', async () => {
    const broken = await epayChannel({ merchant_no: PID, secret_key: KEY, gateway_url: gateway, proxy_url: 'http://127.0.0.1:9' });
    const res = await createOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: broken });
    await notifyGet(broken, notification(res.body.data.order_no, '1.00'));
    const row = await orderRow(api.app, res.body.data.order_no);
    await expect(api.app.get(OrderLifecycle).confirm(row.id as string)).rejects.toThrow(/channel request/);
  });

  it('50200 with data.order_no when the channel cannot make the payment; the order is cancelled', async () => {
    const misconfigured = await epayChannel({ merchant_no: PID, secret_key: KEY });
    const res = await createOrder(api.app, merchant, { cny_amount: '15.00', paychannel_id: misconfigured, merchant_order_no: 'fail-1' });
    expect([res.status, res.body.code]).toEqual([502, 50200]);
    const orderNo = (res.body.data as unknown as { order_no: string }).order_no;
    expect(orderNo).toMatch(/^\d{22}$/);
    expect(await orderRow(api.app, orderNo)).toMatchObject({ status: 'cancelled', pay_url: null });
    expect((await eventsOf(api.app, orderNo)).map((e) => [e.type, e.deliveries])).toEqual([['order.cancelled', 1]]);
    expect(JSON.stringify(res.body)).not.toContain(KEY);
  });

  it('50200 when the channel does not answer within the timeout', async () => {
    const adapters = api.app.get(ChannelAdapters);
    adapters.timeoutMs = 200;
    const hanging: ChannelAdapter = {
      acknowledgement: 'success',
      createPayment: () => new Promise(() => undefined),
      verifyNotification: () => null,
      queryPayment: () => new Promise(() => undefined),
    };
    jest.spyOn(adapters, 'forChannel').mockReturnValue(hanging);
    const started = Date.now();
    const res = await createOrder(api.app, merchant, { cny_amount: '16.00', paychannel_id: channel });
    expect(Date.now() - started).toBeLessThan(3000);
    expect([res.status, res.body.code]).toEqual([502, 50200]);
    const orderNo = (res.body.data as unknown as { order_no: string }).order_no;
    expect((await orderRow(api.app, orderNo)).status).toBe('cancelled');
  });
});
