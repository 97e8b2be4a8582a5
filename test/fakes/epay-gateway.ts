import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small epay gateway ("彩虹易支付" api.php, as its public docs describe it) for reconciliation:
 * `act=order` answers what it holds of an order (status 1 paid, with money and trade_no; 0 unpaid),
 * `act=refundquery` a refund by out_refund_no (status 1 done, 0 processing, 2 failed; code -4
 * when unknown). Every question is recorded, so a test sees one query per order of the day.
 */
export class FakeEpayGateway {
  readonly pid = '1001';
  readonly key = 'epay-recon-key-0123456789';
  /** out_trade_no -> what the gateway says it took. */
  readonly paid = new Map<string, { money: string; tradeNo: string }>();
  /** out_refund_no -> status. */
  readonly refunds = new Map<string, { status: 0 | 1 | 2; refundNo: string }>();
  readonly asked: URLSearchParams[] = [];
  private server!: Server;

  async start(): Promise<string> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.answer(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/`;
  }

  private answer(req: IncomingMessage, res: ServerResponse, body: string): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const json = (value: unknown): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    if (url.pathname !== '/api.php') return void res.writeHead(404).end();
    const q = new URLSearchParams(url.searchParams);
    for (const [k, v] of new URLSearchParams(body)) q.set(k, v);
    this.asked.push(q);
    if (q.get('pid') !== this.pid || q.get('key') !== this.key) return json({ code: -3, msg: 'KEY校验失败' });
    if (q.get('act') === 'refundquery') {
      const refund = this.refunds.get(q.get('out_refund_no') ?? '');
      return json(refund ? { code: 0, refund_no: refund.refundNo, status: refund.status } : { code: -4, msg: '退款单不存在' });
    }
    if (q.get('act') !== 'order') return json({ code: -5, msg: 'no such act' });
    const outTradeNo = q.get('out_trade_no') ?? '';
    const paid = this.paid.get(outTradeNo);
    json(
      paid
        ? { code: 1, msg: '查询订单号成功！', trade_no: paid.tradeNo, out_trade_no: outTradeNo, type: 'alipay', pid: this.pid, money: paid.money, status: 1 }
        : { code: 1, msg: '查询订单号成功！', out_trade_no: outTradeNo, pid: this.pid, money: '0.00', status: 0 },
    );
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
