import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AlipayBillOptions, type AlipayBillRow, alipayTradeBill } from './alipay-bill';
import { type AlipayTestCertificates, alipayCertificates } from './alipay-certificates';
import { type AlipayCertificateSns, AlipayOracle } from './provider-sdks';

/** An RSA-2048 key pair as PEM, the way Alipay's key tool makes one. */
export function rsaKeyPair(): { privateKey: string; publicKey: string } {
  return generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
}

function beijing(at: Date): string {
  return new Date(at.getTime() + 8 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');
}

/** Alipay's JSON writes `/` as `\/` (its answers' URLs read http:\/\/...): still JSON, and the signed text keeps them. */
function alipayJson(value: unknown): string {
  return JSON.stringify(value).replace(/\//g, '\\/');
}

export interface AlipayTrade {
  outTradeNo: string;
  totalAmount: string;
  subject: string;
  notifyUrl: string;
  timeExpire: string;
  status: 'WAIT_BUYER_PAY' | 'TRADE_SUCCESS' | 'TRADE_FINISHED' | 'TRADE_CLOSED';
  tradeNo: string;
  /** The website pay the payer last opened it through (alipay.trade.page.pay or .wap.pay), and where it then sends the payer. */
  method: string;
  returnUrl: string;
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
 * One answer of one method going wrong the way Alipay's do (test/fakes/README.md): a signed
 * `40004 ACQ.SYSTEM_ERROR` with nothing done, or after doing it (the refund was made); no answer
 * at all after doing it; an unsigned `20000 isp.unknow-error`.
 */
export type ApiFault = 'system-error' | 'system-error-after-doing' | 'hang-after-doing' | 'unsigned-error';

/**
 * A faithful Alipay open-platform gateway (gateway.do) for tests, from the public docs, whose
 * signatures are alipay-sdk's (AlipayOracle): its own platform key pair; every request the
 * service signs is verified with the app's public key; page pay shows a cashier page with a Pay
 * button; async notifications (payment, TRADE_CLOSED, TRADE_FINISHED, refunds) are signed form
 * POSTs retried until the body is `success`; API answers are `{"<method>_response": {...},
 * "sign": ...}` signed over the response text, `/` written `\/`; an unverifiable request gets an
 * unsigned 40002. Bills are GBK-named zips behind http links that expire. Switches make it
 * misbehave; test/fakes/README.md says which document each behaviour follows.
 */
/** The two website pays: computer (page) and phone (wap), each with its product code. */
const WEBSITE_PAYS: Record<string, string> = { 'alipay.trade.page.pay': 'FAST_INSTANT_TRADE_PAY', 'alipay.trade.wap.pay': 'QUICK_WAP_WAY' };

export class FakeAlipayGateway {
  readonly platform = rsaKeyPair();
  private readonly oracle: AlipayOracle;
  /** Public-key-certificate mode: the certificates the app holds, and their SNs as alipay-sdk computes them. */
  readonly certificates: AlipayTestCertificates | null = null;
  readonly sns: AlipayCertificateSns | null = null;
  /** One-shot faults by method, taken in order. */
  private readonly faults = new Map<string, ApiFault[]>();
  /** Refund notifications go out as Alipay sends them after a refund (partial: TRADE_SUCCESS, full: TRADE_CLOSED). */
  notifyRefunds = true;
  /** How long a bill_download_url works (Alipay: 30 s). */
  billLinkLifetimeMs = 30_000;
  /** The host bill links name (default: this gateway's own); a test points it elsewhere. */
  billLinkOrigin: string | null = null;
  /** Passed to the bill maker: a bomb in place of one of the zip's files. */
  billOptions: Partial<AlipayBillOptions> = {};
  /** Requests for a bill file this gateway handed out, whatever became of them. */
  billDownloads = 0;
  readonly trades = new Map<string, AlipayTrade>();
  /** Requests whose signature or app_id did not verify: should stay empty. */
  readonly rejected: { method: string; why: string }[] = [];
  readonly apiCalls: { method: string; biz: Record<string, unknown> }[] = [];
  readonly deliveries: NotificationDelivery[] = [];
  api: ApiBehaviour = 'normal';
  /** Edits the rows of a bill before it is made (an injected discrepancy: an amount off, a line dropped). */
  editBill: (rows: AlipayBillRow[]) => AlipayBillRow[] = (rows) => rows;
  /** Bills handed out, by the fileId of their bill_download_url: Alipay's URL works for a short while, no signature needed. */
  private readonly bills = new Map<string, { bytes: Buffer; expiresAt: number }>();
  /** When each refund was given (by out_trade_no/out_request_no): the day whose bill carries it. */
  private readonly refundedAt = new Map<string, Date>();
  /** Certificate mode: the alipay_cert_sn answers name, when a test makes Alipay's certificate another one (renewed). */
  alipayCertSnAnswered: string | null = null;
  /** The retry gaps of undelivered notifications; Alipay's are 4m,10m,10m,1h,2h,6h,15h (scaled down for tests). */
  retryGapsMs = [50, 100, 200, 400];
  private server: Server;
  private readonly timers = new Set<NodeJS.Timeout>();
  url = '';

  constructor(
    readonly appId: string,
    /** The app's public key, uploaded by the merchant in the open platform. */
    appPublicKey: string,
    /** Public-key-certificate mode: the app's private key, for the CSR its certificate is issued from. */
    certificateMode?: { appPrivateKey: string },
  ) {
    this.oracle = new AlipayOracle(appId, appPublicKey, this.platform);
    if (certificateMode) {
      this.certificates = alipayCertificates({ appPrivateKey: certificateMode.appPrivateKey, alipayPrivateKey: this.platform.privateKey });
      this.sns = AlipayOracle.certificateSns(this.certificates, this.platform.privateKey);
    }
  }

  /** The next answer of `method` goes wrong this way (once per call; queued in order). */
  failNext(method: string, fault: ApiFault): void {
    this.faults.set(method, [...(this.faults.get(method) ?? []), fault]);
  }

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
      this.billDownloads++;
      // "获取连接后30秒后未下载，链接地址失效"
      if (Date.now() > bill.expiresAt) return void res.writeHead(403, { 'content-type': 'text/html; charset=utf-8' }).end('链接已失效');
      return void res
        .writeHead(200, {
          'content-type': 'application/oct-stream',
          'content-disposition': `attachment; filename="${url.searchParams.get('downloadFileName')}"`,
        })
        .end(bill.bytes);
    }
    if (url.pathname === '/cashier/pay' && req.method === 'POST') {
      const trade = this.trades.get(new URLSearchParams(body).get('out_trade_no') ?? '');
      if (!trade) return void res.writeHead(404).end('no such trade');
      this.pay(trade.outTradeNo);
      // Alipay sends the payer to return_url with the trade's signed summary (同步返回); without one, its own success page.
      if (trade.returnUrl) return void res.writeHead(302, { location: this.returnLocation(trade) }).end();
      return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<h1>支付成功</h1>');
    }
    res.writeHead(404).end();
  }

  /**
   * The common checks of every request: app_id, sign_type RSA2, in certificate mode the SNs of the
   * app's certificate and of Alipay's root (as alipay-sdk computes them), the signature (as
   * alipay-sdk verifies it) over every parameter but sign.
   */
  private verifyRequest(params: Record<string, string>): string | null {
    if (params.app_id !== this.appId) return 'isv.invalid-app-id';
    if (params.sign_type !== 'RSA2') return 'isv.invalid-signature-type';
    if (this.sns && params.app_cert_sn !== this.sns.appCertSn) return 'isv.app-cert-sn-not-match';
    if (this.sns && params.alipay_root_cert_sn !== this.sns.alipayRootCertSn) return 'isv.alipay-root-cert-sn-not-match';
    if (!this.oracle.requestVerifies(params)) return 'isv.invalid-signature';
    if (params.charset !== 'utf-8' || params.version !== '1.0' || !/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(params.timestamp ?? ''))
      return 'isv.missing-or-invalid-common-param';
    return null;
  }

  /**
   * Computer website pay (alipay.trade.page.pay, FAST_INSTANT_TRADE_PAY) and phone website pay
   * (alipay.trade.wap.pay, QUICK_WAP_WAY, quit_url), GETs of the signed gateway URL: the cashier
   * page, with Pay (and, on a phone, the way back to quit_url). One trade per out_trade_no
   * whichever pay opens it: the same request again is the same trade, and one whose amount,
   * subject or time_expire differ is TRADE_DATA_MATCH_ERROR (交易信息被篡改).
   */
  private pagePay(params: Record<string, string>, res: ServerResponse): void {
    const why = this.verifyRequest(params) ?? (WEBSITE_PAYS[params.method] ? null : 'isv.invalid-method');
    if (why) {
      this.rejected.push({ method: params.method ?? '', why });
      return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<h1>错误代码 ${why}</h1>`);
    }
    const biz = JSON.parse(params.biz_content) as Record<string, string>;
    const wap = params.method === 'alipay.trade.wap.pay';
    if (
      biz.product_code !== WEBSITE_PAYS[params.method] ||
      !/^\d+\.\d{2}$/.test(biz.total_amount) ||
      !biz.subject ||
      !biz.out_trade_no ||
      (wap && !/^https?:\/\//.test(biz.quit_url ?? ''))
    ) {
      this.rejected.push({ method: params.method, why: 'isv.invalid-biz-content' });
      return void res.writeHead(200).end('invalid biz_content');
    }
    let trade = this.trades.get(biz.out_trade_no);
    if (trade && (trade.totalAmount !== biz.total_amount || trade.subject !== biz.subject || trade.timeExpire !== biz.time_expire)) {
      this.rejected.push({ method: params.method, why: 'TRADE_DATA_MATCH_ERROR' });
      return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<h1>错误代码 TRADE_DATA_MATCH_ERROR 交易信息被篡改</h1>');
    }
    if (!trade) {
      trade = {
        outTradeNo: biz.out_trade_no,
        totalAmount: biz.total_amount,
        subject: biz.subject,
        notifyUrl: params.notify_url,
        timeExpire: biz.time_expire,
        status: 'WAIT_BUYER_PAY',
        tradeNo: `2026${randomBytes(12).toString('hex').replace(/\D/g, '').padEnd(24, '7').slice(0, 24)}`,
        method: params.method,
        returnUrl: params.return_url ?? '',
        paidAt: null,
        refunds: new Map(),
      };
      this.trades.set(biz.out_trade_no, trade);
    }
    trade.method = params.method;
    trade.returnUrl = params.return_url ?? '';
    const quit = wap ? `<p><a id="quit" href="${biz.quit_url.replace(/"/g, '&quot;')}">返回商家</a></p>` : '';
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(
        `<h1>支付宝 ${wap ? '手机网站支付' : '收银台'}</h1><p>${biz.subject} ¥${biz.total_amount}</p><form method="post" action="/cashier/pay"><input type="hidden" name="out_trade_no" value="${biz.out_trade_no}"><button>Pay</button></form>${quit}`,
      );
  }

  /** return_url with the synchronous return's parameters, signed like a notification (page pay's and wap pay's 同步返回参数). */
  private returnLocation(trade: AlipayTrade): string {
    const params = this.oracle.signNotification({
      charset: 'utf-8',
      out_trade_no: trade.outTradeNo,
      method: `${trade.method}.return`,
      total_amount: trade.totalAmount,
      trade_no: trade.tradeNo,
      auth_app_id: this.appId,
      version: '1.0',
      app_id: this.appId,
      sign_type: 'RSA2',
      seller_id: '2088102177649450',
      timestamp: beijing(new Date()),
    });
    const url = new URL(trade.returnUrl);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    return url.toString();
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

  /** Alipay closes an unpaid trade itself (time_expire reached): TRADE_CLOSED, notified. */
  expire(outTradeNo: string): NotificationDelivery {
    const trade = this.trades.get(outTradeNo);
    if (!trade) throw new Error(`fake alipay: no trade ${outTradeNo}`);
    trade.status = 'TRADE_CLOSED';
    return this.deliver(trade.notifyUrl, this.notification(trade, { trade_status: 'TRADE_CLOSED', gmt_close: beijing(new Date()) }, { paid: false }));
  }

  /** A paid trade's refund period ends: TRADE_FINISHED, notified (Alipay sends it for products whose trades finish). */
  finish(outTradeNo: string): NotificationDelivery {
    const trade = this.trades.get(outTradeNo);
    if (!trade) throw new Error(`fake alipay: no trade ${outTradeNo}`);
    trade.status = 'TRADE_FINISHED';
    return this.deliver(trade.notifyUrl, this.notification(trade, { trade_status: 'TRADE_FINISHED', gmt_close: beijing(new Date()) }));
  }

  /**
   * A trade_status_sync notification as Alipay sends it, signed by alipay-sdk's rule (AlipayOracle)
   * with `signer` (the platform key unless a test forges one). `body` comes back as the request
   * had it, empty here: Alipay notifies empty values as `body=` and signs them so.
   */
  notification(
    trade: AlipayTrade,
    overrides: Record<string, string> = {},
    { signer = this.platform.privateKey, paid = true }: { signer?: string; paid?: boolean } = {},
  ): Record<string, string> {
    const now = new Date();
    const payment: Record<string, string> = paid
      ? {
          gmt_payment: beijing(trade.paidAt ?? now),
          buyer_id: '2088102177846880',
          invoice_amount: trade.totalAmount,
          fund_bill_list: alipayJson([{ amount: trade.totalAmount, fundChannel: 'ALIPAYACCOUNT' }]),
          receipt_amount: trade.totalAmount,
          point_amount: '0.00',
          buyer_pay_amount: trade.totalAmount,
        }
      : {};
    const params: Record<string, string> = {
      gmt_create: beijing(now),
      charset: 'utf-8',
      notify_time: beijing(now),
      subject: trade.subject,
      body: '',
      version: '1.0',
      notify_id: randomBytes(16).toString('hex'),
      notify_type: 'trade_status_sync',
      out_trade_no: trade.outTradeNo,
      total_amount: trade.totalAmount,
      trade_status: 'TRADE_SUCCESS',
      trade_no: trade.tradeNo,
      auth_app_id: this.appId,
      app_id: this.appId,
      seller_id: '2088102177649450',
      sign_type: 'RSA2',
      ...payment,
      ...overrides,
    };
    return this.oracle.signNotification(params, signer);
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
      // The gateway could not verify the request: it answers the error unsigned.
      return this.answer(res, key, { code: '40002', msg: 'Invalid Arguments', sub_code: why, sub_msg: '验签出错' }, false);
    }
    const biz = JSON.parse(params.biz_content ?? '{}') as Record<string, string>;
    this.apiCalls.push({ method, biz });
    const fault = this.faults.get(method)?.shift();
    if (fault === 'system-error') return this.answer(res, key, { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.SYSTEM_ERROR', sub_msg: '系统错误' });
    if (fault === 'unsigned-error')
      return this.answer(res, key, { code: '20000', msg: 'Service Currently Unavailable', sub_code: 'isp.unknow-error', sub_msg: '系统繁忙' }, false);
    if (fault === 'system-error-after-doing' || fault === 'hang-after-doing') {
      // It did the work; the answer is lost (never sent) or says it does not know.
      this.work(method, biz, key);
      if (fault === 'hang-after-doing') return;
      return this.answer(res, key, { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.SYSTEM_ERROR', sub_msg: '系统错误' });
    }
    const [response, responseKey] = this.work(method, biz, key);
    this.answer(res, responseKey, response);
  }

  /** What a method does to the fake's books, and the answer it makes (with the key it answers under). */
  private work(method: string, biz: Record<string, string>, key: string): [Record<string, unknown>, string] {
    const trade = this.trades.get(biz.out_trade_no ?? '');
    const failed = (subCode: string, subMsg: string): [Record<string, unknown>, string] => [
      { code: '40004', msg: 'Business Failed', sub_code: subCode, sub_msg: subMsg },
      key,
    ];
    const ok = (fields: Record<string, unknown>): [Record<string, unknown>, string] => [{ code: '10000', msg: 'Success', ...fields }, key];
    switch (method) {
      case 'alipay.trade.query':
        if (!trade) return failed('ACQ.TRADE_NOT_EXIST', '交易不存在');
        return ok({
          trade_no: trade.tradeNo,
          out_trade_no: trade.outTradeNo,
          trade_status: trade.status,
          total_amount: trade.totalAmount,
          buyer_pay_amount: trade.status === 'TRADE_SUCCESS' ? trade.totalAmount : '0.00',
        });
      case 'alipay.trade.close':
        if (!trade) return failed('ACQ.TRADE_NOT_EXIST', '交易不存在');
        if (trade.status !== 'WAIT_BUYER_PAY') return failed('ACQ.TRADE_STATUS_ERROR', '交易状态不合法');
        trade.status = 'TRADE_CLOSED';
        // Alipay notifies a closed trade (TRADE_CLOSED is one of the statuses it notifies by default).
        this.deliver(trade.notifyUrl, this.notification(trade, { trade_status: 'TRADE_CLOSED', gmt_close: beijing(new Date()) }, { paid: false }));
        return ok({ trade_no: trade.tradeNo, out_trade_no: trade.outTradeNo });
      case 'alipay.trade.refund':
        return this.refund(trade, biz, key);
      case 'alipay.trade.fastpay.refund.query': {
        if (!trade) return failed('ACQ.TRADE_NOT_EXIST', '交易不存在');
        const refund = trade.refunds.get(biz.out_request_no);
        // No refund under that number: success with no refund in it ("未返回该字段表示退款请求未收到").
        if (!refund) return ok({});
        return ok({
          trade_no: trade.tradeNo,
          out_trade_no: trade.outTradeNo,
          out_request_no: biz.out_request_no,
          refund_amount: refund.amount,
          total_amount: trade.totalAmount,
          refund_status: 'REFUND_SUCCESS',
        });
      }
      case 'alipay.data.dataservice.bill.downloadurl.query': {
        if (biz.bill_type !== 'trade' || !/^\d{4}-\d\d-\d\d$/.test(biz.bill_date ?? '')) return failed('isp.bill_type_or_date_invalid', '参数错误');
        const rows = this.editBill(this.billRows(biz.bill_date));
        // Alipay makes no bill for a day without a trade: the query answers that it does not exist.
        if (rows.length === 0) return failed('isp.bill_not_exist', '账单不存在');
        const fileId = randomBytes(12).toString('hex');
        this.bills.set(fileId, {
          bytes: alipayTradeBill(rows, { date: biz.bill_date, ...this.billOptions }),
          expiresAt: Date.now() + this.billLinkLifetimeMs,
        });
        // Alipay's own bill host, over plain http: http://dwbillcenter.alipay.com/downloadBillFile.resource?...
        const url = new URL('/downloadBillFile.resource', this.billLinkOrigin ?? this.url);
        url.search = new URLSearchParams({
          bizType: 'trade',
          userId: '20881234567890120156',
          fileType: 'csv.zip',
          bizDates: biz.bill_date.replace(/-/g, ''),
          downloadFileName: `20881234567890120156_${biz.bill_date.replace(/-/g, '')}.csv.zip`,
          fileId,
        }).toString();
        return ok({ bill_download_url: url.toString() });
      }
      default:
        return failed('isv.invalid-method', '不存在的方法名');
    }
  }

  /**
   * alipay.trade.refund, idempotent by out_request_no as Alipay is: a repeat of a refund made
   * answers success with `fund_change: N` (no money moved this time). A refund made is notified
   * (out_biz_no, refund_fee, gmt_refund; TRADE_CLOSED once refunded in full).
   */
  private refund(trade: AlipayTrade | undefined, biz: Record<string, string>, key: string): [Record<string, unknown>, string] {
    const failed = (subCode: string, subMsg: string): [Record<string, unknown>, string] => [
      { code: '40004', msg: 'Business Failed', sub_code: subCode, sub_msg: subMsg },
      key,
    ];
    if (!trade) return failed('ACQ.TRADE_NOT_EXIST', '交易不存在');
    if (trade.status !== 'TRADE_SUCCESS') return failed('ACQ.TRADE_STATUS_ERROR', '交易状态不合法');
    const fen = (yuan: string): number => Math.round(Number(yuan) * 100);
    const refundedFen = (): number => [...trade.refunds.values()].reduce((sum, r) => sum + fen(r.amount), 0);
    const repeat = trade.refunds.has(biz.out_request_no);
    if (!repeat) {
      if (refundedFen() + fen(biz.refund_amount) > fen(trade.totalAmount)) return failed('ACQ.REFUND_AMT_NOT_EQUAL_TOTAL', '退款金额超限');
      trade.refunds.set(biz.out_request_no, { amount: biz.refund_amount });
      this.refundedAt.set(`${trade.outTradeNo}/${biz.out_request_no}`, new Date());
      if (this.notifyRefunds) {
        const full = refundedFen() === fen(trade.totalAmount);
        if (full) trade.status = 'TRADE_CLOSED';
        this.deliver(
          trade.notifyUrl,
          this.notification(trade, {
            trade_status: full ? 'TRADE_CLOSED' : 'TRADE_SUCCESS',
            out_biz_no: biz.out_request_no,
            refund_fee: (refundedFen() / 100).toFixed(2),
            gmt_refund: `${beijing(new Date())}.000`,
          }),
        );
      }
    }
    return [
      {
        code: '10000',
        msg: 'Success',
        trade_no: trade.tradeNo,
        out_trade_no: trade.outTradeNo,
        buyer_logon_id: '159****5620',
        fund_change: repeat ? 'N' : 'Y',
        refund_fee: (refundedFen() / 100).toFixed(2),
      },
      key,
    ];
  }

  /**
   * `{"<method>_response": {...}, "sign": "..."}` in Alipay's JSON (`\/`), signed over what
   * alipay-sdk's getSignStr cuts out of it (AlipayOracle); `signed` false: an unsigned error.
   */
  private answer(res: ServerResponse, key: string, response: Record<string, unknown>, signed = true): void {
    const member = alipayJson(response);
    // Certificate mode: the answer names the certificate Alipay signed it with, beside the sign.
    const certSn = this.sns ? (this.alipayCertSnAnswered ?? this.sns.alipayCertSn) : undefined;
    let body: string;
    if (this.api === 'unsigned' || !signed) body = `{"${key}":${member}}`;
    else if (this.api === 'bad-signature') body = this.oracle.signedAnswer(key, member, rsaKeyPair().privateKey, certSn);
    else body = this.oracle.signedAnswer(key, member, undefined, certSn);
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
