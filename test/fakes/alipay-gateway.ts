import { createSign, createVerify, generateKeyPairSync, randomBytes } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AlipayBillRow, alipayTradeBill } from './alipay-bill';

/** An RSA-2048 key pair as PEM, the way Alipay's key tool makes one. */
export function rsaKeyPair(): { privateKey: string; publicKey: string } {
  return generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
}

/** Alipay's content to sign (open platform docs, "自行实现验签"): sorted `k=v&...` of the non-empty parameters but the skipped ones. */
function content(params: Record<string, string>, skip: string[]): string {
  return Object.keys(params)
    .filter((k) => !skip.includes(k) && params[k] !== '')
    .sort()
    .map((k) => `${k}=${params[k]}`)
    .join('&');
}

const rsa2 = (text: string, privateKey: string): string => createSign('RSA-SHA256').update(text, 'utf8').sign(privateKey, 'base64');
const rsa2Ok = (text: string, sign: string | undefined, publicKey: string): boolean => {
  try {
    return !!sign && createVerify('RSA-SHA256').update(text, 'utf8').verify(publicKey, sign, 'base64');
  } catch {
    return false;
  }
};

function beijing(at: Date): string {
  return new Date(at.getTime() + 8 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');
}

export interface AlipayTrade {
  outTradeNo: string;
  totalAmount: string;
  subject: string;
  notifyUrl: string;
  timeExpire: string;
  status: 'WAIT_BUYER_PAY' | 'TRADE_SUCCESS' | 'TRADE_CLOSED';
  tradeNo: string;
  /** When the payer pressed Pay: the day whose bill carries the payment. */
  paidAt: Date | null;
  refunds: Map<string, { amount: string }>;
}

export interface NotificationDelivery {
  params: Record<string, string>;
  answers: { status: number; body: string }[];
}

/** How the gateway answers the API calls (query, close, refund, refund query). */
export type ApiBehaviour = 'normal' | 'http-500' | 'hang' | 'bad-signature' | 'unsigned';

/**
 * A faithful Alipay open-platform gateway (gateway.do) for tests, from the public docs:
 * its own platform key pair; every request the service signs is verified with the app's
 * public key; page pay shows a cashier page with a Pay button; async notifications are
 * signed form POSTs retried until the body is `success`; API answers are
 * `{"<method>_response": {...}, "sign": ...}` signed over the response text. Switches make it misbehave.
 */
export class FakeAlipayGateway {
  readonly platform = rsaKeyPair();
  readonly trades = new Map<string, AlipayTrade>();
  /** Requests whose signature or app_id did not verify: should stay empty. */
  readonly rejected: { method: string; why: string }[] = [];
  readonly apiCalls: { method: string; biz: Record<string, unknown> }[] = [];
  readonly deliveries: NotificationDelivery[] = [];
  api: ApiBehaviour = 'normal';
  /** Edits the rows of a bill before it is made (an injected discrepancy: an amount off, a line dropped). */
  editBill: (rows: AlipayBillRow[]) => AlipayBillRow[] = (rows) => rows;
  /** Bills handed out, by the fileId of their bill_download_url: Alipay's URL works for a short while, no signature needed. */
  private readonly bills = new Map<string, Buffer>();
  /** When each refund was given (by out_trade_no/out_request_no): the day whose bill carries it. */
  private readonly refundedAt = new Map<string, Date>();
  /** The retry gaps of undelivered notifications; Alipay's are 4m,10m,10m,1h,2h,6h,15h (scaled down for tests). */
  retryGapsMs = [50, 100, 200, 400];
  private server: Server;
  private readonly timers = new Set<NodeJS.Timeout>();
  url = '';

  constructor(
    readonly appId: string,
    /** The app's public key, uploaded by the merchant in the open platform. */
    private readonly appPublicKey: string,
  ) {}

  get gateway(): string {
    return `${this.url}/gateway.do`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.route(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private route(req: IncomingMessage, res: ServerResponse, body: string): void {
    const url = new URL(req.url ?? '/', this.url);
    if (url.pathname === '/gateway.do' && req.method === 'GET') return this.pagePay(Object.fromEntries(url.searchParams), res);
    if (url.pathname === '/gateway.do' && req.method === 'POST') return this.api_(Object.fromEntries(new URLSearchParams(body)), res);
    if (url.pathname === '/downloadBillFile.resource' && req.method === 'GET') {
      const bill = this.bills.get(url.searchParams.get('fileId') ?? '');
      if (!bill) return void res.writeHead(404).end('file not found');
      return void res
        .writeHead(200, {
          'content-type': 'application/oct-stream',
          'content-disposition': `attachment; filename="${url.searchParams.get('downloadFileName')}"`,
        })
        .end(bill);
    }
    if (url.pathname === '/cashier/pay' && req.method === 'POST') {
      const trade = this.trades.get(new URLSearchParams(body).get('out_trade_no') ?? '');
      if (!trade) return void res.writeHead(404).end('no such trade');
      this.pay(trade.outTradeNo);
      return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<h1>支付成功</h1>');
    }
    res.writeHead(404).end();
  }

  /** The common checks of every request: app_id, sign_type RSA2, the signature over every parameter but sign. */
  private verifyRequest(params: Record<string, string>): string | null {
    if (params.app_id !== this.appId) return 'isv.invalid-app-id';
    if (params.sign_type !== 'RSA2') return 'isv.invalid-signature-type';
    if (!rsa2Ok(content(params, ['sign']), params.sign, this.appPublicKey)) return 'isv.invalid-signature';
    if (params.charset !== 'utf-8' || params.version !== '1.0' || !/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(params.timestamp ?? ''))
      return 'isv.missing-or-invalid-common-param';
    return null;
  }

  private pagePay(params: Record<string, string>, res: ServerResponse): void {
    const why = this.verifyRequest(params) ?? (params.method === 'alipay.trade.page.pay' ? null : 'isv.invalid-method');
    if (why) {
      this.rejected.push({ method: params.method ?? '', why });
      return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<h1>错误代码 ${why}</h1>`);
    }
    const biz = JSON.parse(params.biz_content) as Record<string, string>;
    if (biz.product_code !== 'FAST_INSTANT_TRADE_PAY' || !/^\d+\.\d{2}$/.test(biz.total_amount) || !biz.subject || !biz.out_trade_no) {
      this.rejected.push({ method: params.method, why: 'isv.invalid-biz-content' });
      return void res.writeHead(200).end('invalid biz_content');
    }
    if (!this.trades.has(biz.out_trade_no)) {
      this.trades.set(biz.out_trade_no, {
        outTradeNo: biz.out_trade_no,
        totalAmount: biz.total_amount,
        subject: biz.subject,
        notifyUrl: params.notify_url,
        timeExpire: biz.time_expire,
        status: 'WAIT_BUYER_PAY',
        tradeNo: `2026${randomBytes(12).toString('hex').replace(/\D/g, '').padEnd(24, '7').slice(0, 24)}`,
        paidAt: null,
        refunds: new Map(),
      });
    }
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(
        `<h1>支付宝 收银台</h1><p>${biz.subject} ¥${biz.total_amount}</p><form method="post" action="/cashier/pay"><input type="hidden" name="out_trade_no" value="${biz.out_trade_no}"><button>Pay</button></form>`,
      );
  }

  /** The payer pays: the trade succeeds and its notification goes out (unless told otherwise). */
  pay(outTradeNo: string, how: { notify?: 'once' | 'never' | 'twice'; amount?: string } = {}): NotificationDelivery {
    const trade = this.trades.get(outTradeNo);
    if (!trade) throw new Error(`fake alipay: no trade ${outTradeNo}`);
    trade.status = 'TRADE_SUCCESS';
    trade.paidAt = new Date();
    const notify = how.notify ?? 'once';
    const params = this.notification(trade, { total_amount: how.amount ?? trade.totalAmount });
    if (notify === 'never') return { params, answers: [] };
    const first = this.deliver(trade.notifyUrl, params);
    if (notify === 'twice') this.deliver(trade.notifyUrl, this.notification(trade, { total_amount: how.amount ?? trade.totalAmount }));
    return first;
  }

  /** A trade_status_sync notification as Alipay sends it, signed with `signer` (the platform key unless a test forges one). */
  notification(trade: AlipayTrade, overrides: Record<string, string> = {}, signer = this.platform.privateKey): Record<string, string> {
    const now = new Date();
    const params: Record<string, string> = {
      gmt_create: beijing(now),
      charset: 'utf-8',
      gmt_payment: beijing(now),
      notify_time: beijing(now),
      subject: trade.subject,
      buyer_id: '2088102177846880',
      invoice_amount: trade.totalAmount,
      version: '1.0',
      notify_id: randomBytes(16).toString('hex'),
      fund_bill_list: JSON.stringify([{ amount: trade.totalAmount, fundChannel: 'ALIPAYACCOUNT' }]),
      notify_type: 'trade_status_sync',
      out_trade_no: trade.outTradeNo,
      total_amount: trade.totalAmount,
      trade_status: 'TRADE_SUCCESS',
      trade_no: trade.tradeNo,
      auth_app_id: this.appId,
      receipt_amount: trade.totalAmount,
      point_amount: '0.00',
      buyer_pay_amount: trade.totalAmount,
      app_id: this.appId,
      seller_id: '2088102177649450',
      sign_type: 'RSA2',
      ...overrides,
    };
    return { ...params, sign: rsa2(content(params, ['sign', 'sign_type']), signer) };
  }

  /** POSTs the form to notify_url, and again on the retry schedule while the answer is not `success`. */
  deliver(notifyUrl: string, params: Record<string, string>): NotificationDelivery {
    const delivery: NotificationDelivery = { params, answers: [] };
    this.deliveries.push(delivery);
    const attempt = async (n: number): Promise<void> => {
      let answer = { status: 0, body: '' };
      try {
        const res = await fetch(notifyUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
          body: new URLSearchParams(params).toString(),
        });
        answer = { status: res.status, body: await res.text() };
      } catch {
        // Unreachable: retried like any answer other than success.
      }
      delivery.answers.push(answer);
      if (answer.body === 'success' || n >= this.retryGapsMs.length) return;
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        void attempt(n + 1);
      }, this.retryGapsMs[n]);
      this.timers.add(timer);
    };
    void attempt(0);
    return delivery;
  }

  /** A notification sent once (no retries), answering what the service said. */
  async post(notifyUrl: string, params: Record<string, string>): Promise<{ status: number; body: string }> {
    const res = await fetch(notifyUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body: new URLSearchParams(params).toString(),
    });
    return { status: res.status, body: await res.text() };
  }

  private api_(params: Record<string, string>, res: ServerResponse): void {
    const method = params.method ?? '';
    const key = `${method.replace(/\./g, '_')}_response`;
    if (this.api === 'hang') return;
    if (this.api === 'http-500') return void res.writeHead(500).end('Internal Server Error');
    const why = this.verifyRequest(params);
    if (why) {
      this.rejected.push({ method, why });
      return this.answer(res, key, { code: '40002', msg: 'Invalid Arguments', sub_code: why, sub_msg: '验签出错' });
    }
    const biz = JSON.parse(params.biz_content ?? '{}') as Record<string, string>;
    this.apiCalls.push({ method, biz });
    const trade = this.trades.get(biz.out_trade_no ?? '');
    const notExist = { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.TRADE_NOT_EXIST', sub_msg: '交易不存在' };
    switch (method) {
      case 'alipay.trade.query':
        if (!trade) return this.answer(res, key, notExist);
        return this.answer(res, key, {
          code: '10000',
          msg: 'Success',
          trade_no: trade.tradeNo,
          out_trade_no: trade.outTradeNo,
          trade_status: trade.status,
          total_amount: trade.totalAmount,
          buyer_pay_amount: trade.status === 'TRADE_SUCCESS' ? trade.totalAmount : '0.00',
        });
      case 'alipay.trade.close':
        if (!trade) return this.answer(res, key, notExist);
        if (trade.status !== 'WAIT_BUYER_PAY')
          return this.answer(res, key, { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.TRADE_STATUS_ERROR', sub_msg: '交易状态不合法' });
        trade.status = 'TRADE_CLOSED';
        return this.answer(res, key, { code: '10000', msg: 'Success', trade_no: trade.tradeNo, out_trade_no: trade.outTradeNo });
      case 'alipay.trade.refund': {
        if (!trade || trade.status !== 'TRADE_SUCCESS')
          return this.answer(
            res,
            key,
            trade ? { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.TRADE_STATUS_ERROR', sub_msg: '交易状态不合法' } : notExist,
          );
        const refunded = [...trade.refunds.values()].reduce((sum, r) => sum + Math.round(Number(r.amount) * 100), 0);
        // Idempotent by out_request_no, as Alipay is.
        if (!trade.refunds.has(biz.out_request_no)) {
          if (refunded + Math.round(Number(biz.refund_amount) * 100) > Math.round(Number(trade.totalAmount) * 100)) {
            return this.answer(res, key, { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.REFUND_AMT_NOT_EQUAL_TOTAL', sub_msg: '退款金额超限' });
          }
          trade.refunds.set(biz.out_request_no, { amount: biz.refund_amount });
          this.refundedAt.set(`${trade.outTradeNo}/${biz.out_request_no}`, new Date());
        }
        const total = [...trade.refunds.values()].reduce((sum, r) => sum + Math.round(Number(r.amount) * 100), 0);
        return this.answer(res, key, {
          code: '10000',
          msg: 'Success',
          trade_no: trade.tradeNo,
          out_trade_no: trade.outTradeNo,
          fund_change: 'Y',
          refund_fee: (total / 100).toFixed(2),
        });
      }
      case 'alipay.trade.fastpay.refund.query': {
        if (!trade) return this.answer(res, key, notExist);
        const refund = trade.refunds.get(biz.out_request_no);
        if (!refund) return this.answer(res, key, { code: '10000', msg: 'Success' });
        return this.answer(res, key, {
          code: '10000',
          msg: 'Success',
          trade_no: trade.tradeNo,
          out_trade_no: trade.outTradeNo,
          out_request_no: biz.out_request_no,
          refund_amount: refund.amount,
          total_amount: trade.totalAmount,
          refund_status: 'REFUND_SUCCESS',
        });
      }
      case 'alipay.data.dataservice.bill.downloadurl.query': {
        if (biz.bill_type !== 'trade' || !/^\d{4}-\d\d-\d\d$/.test(biz.bill_date ?? '')) {
          return this.answer(res, key, { code: '40004', msg: 'Business Failed', sub_code: 'isp.bill_type_or_date_invalid', sub_msg: '参数错误' });
        }
        const rows = this.editBill(this.billRows(biz.bill_date));
        // Alipay makes no bill for a day without a trade: the query answers that it does not exist.
        if (rows.length === 0) return this.answer(res, key, { code: '40004', msg: 'Business Failed', sub_code: 'isp.bill_not_exist', sub_msg: '账单不存在' });
        const fileId = randomBytes(12).toString('hex');
        this.bills.set(fileId, alipayTradeBill(rows, { date: biz.bill_date }));
        const url = new URL('/downloadBillFile.resource', this.url);
        url.search = new URLSearchParams({
          bizType: 'trade',
          userId: '20881234567890120156',
          fileType: 'csv.zip',
          bizDates: biz.bill_date.replace(/-/g, ''),
          downloadFileName: `20881234567890120156_${biz.bill_date.replace(/-/g, '')}.csv.zip`,
          fileId,
        }).toString();
        return this.answer(res, key, { code: '10000', msg: 'Success', bill_download_url: url.toString() });
      }
      default:
        return this.answer(res, key, { code: '40004', msg: 'Business Failed', sub_code: 'isv.invalid-method' });
    }
  }

  /** `{"<method>_response": {...}, "sign": "..."}`, signed over the response object's exact text. */
  private answer(res: ServerResponse, key: string, response: Record<string, unknown>): void {
    const text = JSON.stringify(response);
    const sign = this.api === 'bad-signature' ? rsa2(text, rsaKeyPair().privateKey) : rsa2(text, this.platform.privateKey);
    const body = this.api === 'unsigned' ? `{"${key}":${text}}` : `{"${key}":${text},"sign":"${sign}"}`;
    res.writeHead(200, { 'content-type': 'text/html;charset=utf-8' }).end(body);
  }

  /** What the cashier did on a Beijing day: each payment made, each refund given, with Alipay's 0.6% fee (returned pro rata on a refund). */
  billRows(date: string): AlipayBillRow[] {
    const onDay = (at: Date | null): boolean => at !== null && beijing(at).startsWith(date);
    const fen = (yuan: string): number => Math.round(Number(yuan) * 100);
    const yuan = (f: number): string => `${f < 0 ? '-' : ''}${(Math.abs(f) / 100).toFixed(2)}`;
    const rows: AlipayBillRow[] = [];
    for (const trade of this.trades.values()) {
      const common = { tradeNo: trade.tradeNo, orderNo: trade.outTradeNo, subject: trade.subject, amount: trade.totalAmount };
      if (onDay(trade.paidAt))
        rows.push({
          ...common,
          type: '交易',
          received: trade.totalAmount,
          fee: yuan(-Math.round(fen(trade.totalAmount) * 0.006)),
          time: beijing(trade.paidAt!),
        });
      for (const [refundNo, refund] of trade.refunds) {
        const at = this.refundedAt.get(`${trade.outTradeNo}/${refundNo}`) ?? null;
        if (onDay(at))
          rows.push({
            ...common,
            type: '退款',
            received: yuan(-fen(refund.amount)),
            refundNo,
            fee: yuan(Math.round(fen(refund.amount) * 0.006)),
            time: beijing(at!),
          });
      }
    }
    return rows;
  }
}
