import { createHash } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { ChannelAdapters, type ChannelAdapter } from '@app/channels';
import { QUEUE } from '@app/common';
import { OrderLifecycle, RefundLifecycle } from '@app/orders';
import { JobQueue } from '@app/queue';
import type { Credentials } from '@app/operator';
import { type TestApi, startTestApi } from './helpers/api';
import { books, entriesOf, orderClose, refundCreate, refundRow } from './helpers/money-out';
import { createOrder, eventsOf, orderRow, sql } from './helpers/orders';

const PID = '1001';
const KEY = 'epay-test-key-0123456789';

function md5Sign(params: Record<string, string>, key: string): string {
  const text = Object.keys(params)
    .filter((k) => k !== 'sign' && k !== 'sign_type' && params[k] !== '')
    .sort()
    .map((k) => `${k}=${params[k]}`)
    .join('&');
  return createHash('md5')
    .update(text + key)
    .digest('hex');
}

/** What the fake gateway does with a refund request. */
type RefundBehaviour =
  /** Takes it: code 0 and its refund number. */
  | 'take'
  /** Refuses it: code -1 with a message. */
  | 'refuse'
  /** Takes it, then answers HTTP 500: the service cannot know it was taken. */
  | 'take-then-500'
  /** Takes it and never answers: a timeout. */
  | 'take-then-hang'
  /** Answers HTTP 502 without taking it (a proxy in front failed). */
  | 'lose';

/**
 * A small epay gateway: api.php?act=order from `paid` (never answering when `hang`); act=refund
 * (POST) and act=refundquery keep refunds by out_refund_no; act=close (POST) records closes.
 */
class FakeEpay {
  server: Server;
  paid = new Map<string, { money: string; tradeNo: string }>();
  queries: URLSearchParams[] = [];
  hang = false;
  refunds = new Map<string, { outTradeNo: string; money: string; refundNo: string; status: 0 | 1 | 2 }>();
  refundRequests: URLSearchParams[] = [];
  refundQueries: URLSearchParams[] = [];
  refundBehaviour: RefundBehaviour = 'take';
  /** The status a refund the gateway takes starts in: 1 done at once, 0 still processing. */
  takenStatus: 0 | 1 = 1;
  /** The query does not see taken refunds yet (a gateway's own lag). */
  queryLags = false;
  closes: URLSearchParams[] = [];
  closeAnswer: Record<string, unknown> = { code: 1, msg: 'closed' };

  async start(): Promise<string> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.answer(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Refunds the gateway really made. */
  get refundsMade(): number {
    return this.refunds.size;
  }

  private answer(req: IncomingMessage, res: ServerResponse, body: string): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname !== '/api.php') return void res.writeHead(404).end();
    const q = new URLSearchParams(url.searchParams);
    for (const [k, v] of new URLSearchParams(body)) q.set(k, v);
    const json = (value: unknown): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    const act = q.get('act');
    if (act === 'refund' || act === 'refundquery' || act === 'close') {
      if (q.get('pid') !== PID || q.get('key') !== KEY) return json({ code: -3, msg: 'bad key' });
      if (act === 'close') {
        this.closes.push(q);
        return json(this.closeAnswer);
      }
      if (act === 'refundquery') {
        this.refundQueries.push(q);
        const refund = this.queryLags ? undefined : this.refunds.get(q.get('out_refund_no') ?? '');
        return json(
          refund
            ? { code: 0, refund_no: refund.refundNo, out_trade_no: refund.outTradeNo, money: refund.money, status: refund.status }
            : { code: -4, msg: 'no such refund' },
        );
      }
      this.refundRequests.push(q);
      if (req.method !== 'POST') return json({ code: -1, msg: 'POST only' });
      if (this.refundBehaviour === 'lose') return void res.writeHead(502).end('bad gateway');
      if (this.refundBehaviour === 'refuse') return json({ code: -1, msg: '商户余额不足' });
      const outRefundNo = q.get('out_refund_no') ?? '';
      // Idempotent by out_refund_no, as gateways that take one are.
      if (!this.refunds.has(outRefundNo)) {
        this.refunds.set(outRefundNo, {
          outTradeNo: q.get('out_trade_no') ?? '',
          money: q.get('money') ?? '',
          refundNo: `RF${this.refunds.size + 1}`,
          status: this.takenStatus,
        });
      }
      if (this.refundBehaviour === 'take-then-500') return void res.writeHead(500).end('internal error');
      if (this.refundBehaviour === 'take-then-hang') return;
      return json({ code: 0, msg: '退款成功', refund_no: this.refunds.get(outRefundNo)!.refundNo });
    }
    this.queries.push(url.searchParams);
    if (this.hang) return;
    if (act !== 'order' || q.get('pid') !== PID || q.get('key') !== KEY) return json({ code: -1, msg: 'bad key' });
    const paid = this.paid.get(q.get('out_trade_no') ?? '');
    json(
      paid
        ? { code: 1, msg: 'ok', trade_no: paid.tradeNo, out_trade_no: q.get('out_trade_no'), pid: PID, money: paid.money, status: 1 }
        : { code: 1, msg: 'ok', out_trade_no: q.get('out_trade_no'), pid: PID, money: '0.00', status: 0 },
    );
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A CONNECT proxy that counts the tunnels it opened. */
async function startProxy(): Promise<{ url: string; tunnels: () => number; stop: () => Promise<void> }> {
  let tunnels = 0;
  // A tunnel's sockets leave the HTTP server's books: closed by hand, or stop() waits for their idle timeout.
  const sockets = new Set<{ destroy(): void }>();
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
    sockets.add(socket).add(upstream);
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tunnels: () => tunnels,
    stop: () => {
      server.closeAllConnections();
      for (const socket of sockets) socket.destroy();
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
    const { id } = await api.operator.channels.create({
      category: 'remotepay',
      name: 'epay',
      payMethod: 'alipay,wxpay',
      adapter: 'epay',
      rate: '0.006',
      config: JSON.stringify(config),
    });
    await api.operator.channels.link(merchant.id, id);
    return id;
  }

  beforeAll(async () => {
    // The fake gateway speaks plain http on localhost.
    api = await startTestApi({ CHANNEL_ALLOW_HTTP: 'true' });
    epay = new FakeEpay();
    gateway = await epay.start();
    proxy = await startProxy();
    // epay moves real money: a live merchant (SPEC 5).
    merchant = await api.operator.merchants.create({ name: 'epay shop' });
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
    epay.refundBehaviour = 'take';
    epay.takenStatus = 1;
    epay.queryLags = false;
    epay.closeAnswer = { code: 1, msg: 'closed' };
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
      name: `Order ${orderNo}`,
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

  it('notification (GET or POST) -> paid, waiting for the confirm job; query through the proxy confirms -> completed, credited once', async () => {
    const before = await api.operator.ledger.balance(merchant.id);
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
    // Anyone with the shared md5 key can sign an epay notification: not final, so the order waits
    // in paid for the worker's confirm job (SPEC 5), unlike the sandbox, alipay and wechatpay.
    expect(
      await api.app
        .get(JobQueue)
        .queue(QUEUE.orders)
        .getJob(`confirm-${row.id as string}`),
    ).toBeDefined();
    expect((await eventsOf(api.app, orderNo)).map((e) => e.type)).toEqual(['order.paid']);

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
    const after = await api.operator.ledger.balance(merchant.id);
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
    await expect(api.app.get(OrderLifecycle).confirm(row.id as string)).rejects.toThrow(/timed out/);
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
      paidIsFinal: false,
      createPayment: () => new Promise(() => undefined),
      verifyNotification: () => null,
      queryPayment: () => new Promise(() => undefined),
    };
    jest.spyOn(adapters, 'forChannel').mockReturnValue(hanging);
    // The channel never answers: an answer at all is the timeout's.
    const res = await createOrder(api.app, merchant, { cny_amount: '16.00', paychannel_id: channel });
    expect([res.status, res.body.code]).toEqual([502, 50200]);
    const orderNo = (res.body.data as unknown as { order_no: string }).order_no;
    expect((await orderRow(api.app, orderNo)).status).toBe('cancelled');
  });

  /** A top-up paid through the gateway and confirmed by its query: completed, credited. */
  async function completedEpayOrder(amount: string, channelId = channel): Promise<{ orderNo: string; tradeNo: string }> {
    const res = await createOrder(api.app, merchant, { cny_amount: amount, paychannel_id: channelId });
    const orderNo = res.body.data.order_no;
    const n = notification(orderNo, amount);
    expect((await notifyGet(channelId, n)).body).toBe('success');
    epay.paid.set(orderNo, { money: amount, tradeNo: n.trade_no });
    await api.app.get(OrderLifecycle).confirm((await orderRow(api.app, orderNo)).id as string);
    expect((await orderRow(api.app, orderNo)).status).toBe('completed');
    return { orderNo, tradeNo: n.trade_no };
  }

  const refunds = () => api.app.get(RefundLifecycle);
  let refundSeq = 0;
  async function newRefund(orderNo: string, amount: string): Promise<{ refundNo: string; id: string }> {
    const res = await refundCreate(api.app, merchant, { order_no: orderNo, refund_amount: amount, merchant_refund_no: `epay-r-${++refundSeq}` });
    expect(res.body.code).toBe(1);
    return { refundNo: res.body.data.refund_no, id: (await refundRow(api.app, res.body.data.refund_no)).id as string };
  }

  describe('money out', () => {
    it('orderClose tells the gateway (api.php?act=close, through the proxy); an error from it does not undo the close', async () => {
      // A proxy of its own: its first tunnel is this close's.
      const fresh = await startProxy();
      const viaFresh = await epayChannel({ merchant_no: PID, secret_key: KEY, gateway_url: gateway, proxy_url: fresh.url });
      const res = await createOrder(api.app, merchant, { cny_amount: '3.00', paychannel_id: viaFresh });
      const closed = await orderClose(api.app, merchant, res.body.data.order_no);
      expect([closed.body.code, closed.body.data.status]).toEqual([1, 'cancelled']);
      expect(Object.fromEntries(epay.closes.at(-1)!)).toEqual({ act: 'close', pid: PID, key: KEY, out_trade_no: res.body.data.order_no });
      expect(fresh.tunnels()).toBe(1);
      await fresh.stop();

      epay.closeAnswer = { code: -1, msg: 'no such act' };
      const other = await createOrder(api.app, merchant, { cny_amount: '3.00', paychannel_id: channel });
      expect((await orderClose(api.app, merchant, other.body.data.order_no)).body.code).toBe(1);
      // A payment made anyway still counts.
      expect((await notifyGet(channel, notification(other.body.data.order_no, '3.00'))).body).toBe('success');
      expect(await orderRow(api.app, other.body.data.order_no)).toMatchObject({ status: 'paid', late_payment: true });
    });

    it("refund calls go through the channel's proxy: an unreachable one is a channel failure, and the gateway hears nothing", async () => {
      const viaDead = await epayChannel({ merchant_no: PID, secret_key: KEY, gateway_url: gateway, proxy_url: 'http://127.0.0.1:9' });
      const res = await createOrder(api.app, merchant, { cny_amount: '5.00', paychannel_id: viaDead });
      const orderNo = res.body.data.order_no;
      await notifyGet(viaDead, notification(orderNo, '5.00'));
      // Completed here as the worker would after a confirmation the dead proxy cannot carry.
      const row = await orderRow(api.app, orderNo);
      await sql(api.app).query(`UPDATE orders SET status = 'completed' WHERE id = $1`, [row.id]);
      const refund = await newRefund(orderNo, '1.00');
      const requests = epay.refundRequests.length;
      await expect(refunds().process(refund.id)).rejects.toThrow(/channel request/);
      expect(epay.refundRequests).toHaveLength(requests);
      expect((await refundRow(api.app, refund.refundNo)).status).toBe('processing');
    });

    it('refund: api.php?act=refund (POST) then act=refundquery confirms; refund.succeeded', async () => {
      const { orderNo, tradeNo } = await completedEpayOrder('50.00', proxiedChannel);
      const refund = await newRefund(orderNo, '20.00');
      epay.takenStatus = 0;
      await expect(refunds().process(refund.id)).rejects.toThrow(/the channel answers processing/);
      const asked = epay.refundRequests.at(-1)!;
      expect(Object.fromEntries(asked)).toEqual({
        act: 'refund',
        pid: PID,
        key: KEY,
        out_trade_no: orderNo,
        trade_no: tradeNo,
        money: '20.00',
        out_refund_no: refund.refundNo,
      });
      expect(await refundRow(api.app, refund.refundNo)).toMatchObject({ status: 'processing', channel_refund_no: 'RF1' });
      // The gateway finishes it; the retry only queries.
      epay.refunds.get(refund.refundNo)!.status = 1;
      const requests = epay.refundRequests.length;
      await refunds().process(refund.id);
      expect(epay.refundRequests).toHaveLength(requests);
      expect(Object.fromEntries(epay.refundQueries.at(-1)!)).toEqual({ act: 'refundquery', pid: PID, key: KEY, out_refund_no: refund.refundNo });
      expect((await refundRow(api.app, refund.refundNo)).status).toBe('succeeded');
      expect((await eventsOf(api.app, orderNo)).map((e) => e.type)).toEqual(['order.paid', 'order.completed', 'refund.succeeded']);
    });

    it.each([
      ['an HTTP 500 after taking it', 'take-then-500' as const],
      ['no answer within the timeout after taking it', 'take-then-hang' as const],
    ])('an unknown outcome (%s) is queried, never asked again: refunded once', async (_name, behaviour) => {
      const { orderNo } = await completedEpayOrder('30.00');
      const refund = await newRefund(orderNo, '10.00');
      const made = epay.refundsMade;
      epay.refundBehaviour = behaviour;
      api.app.get(ChannelAdapters).timeoutMs = 500;
      await expect(refunds().process(refund.id)).rejects.toThrow(/HTTP 500|timed out/);
      expect(await refundRow(api.app, refund.refundNo)).toMatchObject({ status: 'processing', lease_until: null });
      expect((await refundRow(api.app, refund.refundNo)).channel_requested_at).not.toBeNull();
      // Every later attempt queries first: the gateway has it, so it is settled without a second request.
      epay.refundBehaviour = 'take';
      const requests = epay.refundRequests.length;
      await refunds().process(refund.id);
      expect(epay.refundRequests).toHaveLength(requests);
      expect(epay.refundsMade).toBe(made + 1);
      expect((await refundRow(api.app, refund.refundNo)).status).toBe('succeeded');
    });

    it('a request the gateway never got is asked again after the query says so: refunded once', async () => {
      const { orderNo } = await completedEpayOrder('30.00');
      const refund = await newRefund(orderNo, '10.00');
      const made = epay.refundsMade;
      epay.refundBehaviour = 'lose';
      await expect(refunds().process(refund.id)).rejects.toThrow(/HTTP 502/);
      expect(epay.refundsMade).toBe(made);
      epay.refundBehaviour = 'take';
      await refunds().process(refund.id);
      expect(epay.refundsMade).toBe(made + 1);
      expect((await refundRow(api.app, refund.refundNo)).status).toBe('succeeded');
    });

    it('a refund the gateway took is never asked for again, even while its query does not find it yet', async () => {
      const { orderNo } = await completedEpayOrder('30.00');
      const refund = await newRefund(orderNo, '10.00');
      epay.queryLags = true;
      await expect(refunds().process(refund.id)).rejects.toThrow(/processing/);
      const requests = epay.refundRequests.length;
      await expect(refunds().process(refund.id)).rejects.toThrow(/processing/);
      await expect(refunds().process(refund.id)).rejects.toThrow(/processing/);
      expect(epay.refundRequests).toHaveLength(requests);
      epay.queryLags = false;
      await refunds().process(refund.id);
      expect((await refundRow(api.app, refund.refundNo)).status).toBe('succeeded');
    });

    it('a gateway refusal fails the refund with its message and gives the debit back', async () => {
      const { orderNo } = await completedEpayOrder('30.00');
      const before = await books(api.app, merchant.id);
      const refund = await newRefund(orderNo, '10.00');
      epay.refundBehaviour = 'refuse';
      await refunds().process(refund.id);
      expect(await refundRow(api.app, refund.refundNo)).toMatchObject({ status: 'failed', failure: 'epay code -1: 商户余额不足' });
      expect(await books(api.app, merchant.id)).toEqual(before);
      expect((await entriesOf(api.app, orderNo)).filter((e) => e.refund_no).map((e) => e.kind)).toEqual(['refund_debit', 'refund_reversal']);
      expect(JSON.stringify(await refundRow(api.app, refund.refundNo))).not.toContain(KEY);
    });
  });
});
