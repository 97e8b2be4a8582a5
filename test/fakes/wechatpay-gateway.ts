import { execFileSync } from 'node:child_process';
import { randomBytes, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { type AddressInfo, isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rsaKeyPair } from './alipay-gateway';
import { WechatpayOracle } from './provider-sdks';
import { type WechatpayBillOptions, type WechatpayBillRow, gzipBomb, wechatpayTradeBill } from './wechatpay-bill';

/** A platform certificate as WeChat Pay issued them before public keys: self-signed here, made by openssl at test time. */
export function platformCertificate(): { certificate: string; privateKey: string; serial: string } {
  const dir = mkdtempSync(join(tmpdir(), 'wxcert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-subj',
        '/CN=Tenpay.com Root CA',
        '-days',
        '2',
      ],
      { stdio: 'ignore' },
    );
    const certificate = readFileSync(join(dir, 'cert.pem'), 'utf8');
    return { certificate, privateKey: readFileSync(join(dir, 'key.pem'), 'utf8'), serial: new X509Certificate(certificate).serialNumber.toUpperCase() };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The trade types of the three order APIs (the query's trade_type). */
export type WechatTradeType = 'NATIVE' | 'MWEB' | 'JSAPI';

export interface WechatTrade {
  outTradeNo: string;
  tradeType: WechatTradeType;
  total: number;
  description: string;
  notifyUrl: string;
  timeExpire: string;
  /** NATIVE's code_url (empty for the other types). */
  codeUrl: string;
  /** MWEB's and JSAPI's prepay_id. */
  prepayId: string;
  /** JSAPI: the payer the trade is for; MWEB: the payer's address, as the last order call gave it. */
  openid: string | null;
  payerClientIp: string | null;
  /** MWEB: when the last h5_url stops working (5 minutes after it was made). */
  h5UrlExpiresAt: number;
  state: 'NOTPAY' | 'SUCCESS' | 'CLOSED' | 'REFUND';
  transactionId: string;
  /** When the payer paid: the day whose bill carries the payment. */
  paidAt: Date | null;
  refunds: Map<string, { refundId: string; amount: number; status: 'SUCCESS' | 'PROCESSING' | 'ABNORMAL' | 'CLOSED'; notifyUrl: string | null; at: Date }>;
}

export interface WechatNotification {
  headers: Record<string, string>;
  body: string;
}

export interface WechatDelivery {
  notification: WechatNotification;
  answers: { status: number; body: string }[];
}

export type ApiBehaviour = 'normal' | 'http-500' | 'hang' | 'bad-signature' | 'unsigned';

/** The APIs a fault can be put on. */
export type WechatApi = 'native' | 'h5' | 'jsapi' | 'query' | 'close' | 'refund' | 'refund-query' | 'tradebill' | 'certificates';

/** The order APIs and the trade type each opens. */
const ORDER_APIS: Record<string, WechatTradeType> = {
  '/v3/pay/transactions/native': 'NATIVE',
  '/v3/pay/transactions/h5': 'MWEB',
  '/v3/pay/transactions/jsapi': 'JSAPI',
};

/**
 * One answer going wrong the way WeChat Pay's do (test/fakes/README.md): 500 SYSTEM_ERROR with
 * nothing done, or after doing it (the refund was made); no answer after doing it; a signed 429
 * FREQUENCY_LIMITED; an answer whose signature is a `WECHATPAY/SIGNTEST/` probe.
 */
export type ApiFault = 'system-error' | 'system-error-after-doing' | 'hang-after-doing' | 'rate-limited' | 'probe';

/** The address a request came from, as WeChat sees the payer (the test's browser dials 127.0.0.1 directly). */
function clientIp(req: IncomingMessage): string {
  return (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
}

/** A signature probe: WeChat Pay puts these on answers and notifications now and then; a merchant that accepts one does not verify. */
export const SIGNTEST_PREFIX = 'WECHATPAY/SIGNTEST/';

/** AEAD_AES_256_GCM as WeChat Pay encrypts a resource, by wechatpay-axios-plugin's Aes.AesGcm: base64(ciphertext || 16-byte tag). */
export function encryptResource(plain: string, apiV3Key: string, nonce: string, associatedData: string): string {
  return WechatpayOracle.encrypt(plain, apiV3Key, nonce, associatedData);
}

/**
 * A faithful WeChat Pay API v3 gateway for tests, from the public docs, whose signatures and
 * encryption are wechatpay-axios-plugin's (WechatpayOracle): it verifies every request's
 * WECHATPAY2-SHA256-RSA2048 Authorization with the merchant's API certificate key (a 401
 * SIGN_ERROR, unsigned, when it does not), answers signed with its platform public key
 * (Wechatpay-Serial PUB_KEY_ID_...) or, while a merchant switches, its platform certificate,
 * sends AEAD_AES_256_GCM encrypted notifications with WeChat's retries, writes its bills with a
 * BOM, and has a page where a test "scans and pays" a code_url. Switches make it misbehave;
 * test/fakes/README.md says which document each behaviour follows.
 */
export class FakeWechatpayGateway {
  readonly publicKeyId = `PUB_KEY_ID_${randomBytes(12).toString('hex').toUpperCase()}`;
  readonly platform = rsaKeyPair();
  /** The platform certificates in force, oldest first; the newest signs (signWith 'certificate'). */
  readonly certificates = [platformCertificate()];
  /** GET /v3/certificates answered so far. */
  certificateDownloads = 0;
  /** The domain registered for H5 payments (商户平台 → H5支付 → 支付域名): its pages must send it as Referer. */
  h5Origin: string | null = null;
  /** The AppSecret of appid, for the OAuth token exchange. */
  appSecret: string | null = null;
  /** Who the next OAuth authorization is for: the WeChat user opening the page. */
  oauthOpenid = `o${randomBytes(14).toString('base64url')}`;
  /** The next OAuth answers is_snapshotuser: 1 (WeChat's snapshot-page visitor). */
  snapshotUser = false;
  /** OAuth codes handed out: five minutes, once. */
  private readonly oauthCodes = new Map<string, { openid: string; used: boolean; expiresAt: number }>();
  /** Requests the fake refused that were not API calls (H5 pages, OAuth, JSAPI calls): should stay empty unless a test provokes one. */
  readonly payerRefusals: { where: string; why: string }[] = [];
  readonly trades = new Map<string, WechatTrade>();
  readonly rejected: { path: string; why: string }[] = [];
  readonly calls: { method: string; path: string; body: Record<string, unknown> | null }[] = [];
  readonly deliveries: WechatDelivery[] = [];
  api: ApiBehaviour = 'normal';
  /** Which platform key signs answers and notifications. */
  signWith: 'public-key' | 'certificate' = 'public-key';
  /** New refunds start in this state. */
  refundState: 'SUCCESS' | 'PROCESSING' = 'SUCCESS';
  /** Refund notifications (REFUND.*) go out as WeChat sends them once a refund ends. */
  notifyRefunds = true;
  /** WeChat retries at 15s,15s,30s,3m,10m,20m,30m,... (scaled down for tests). */
  retryGapsMs = [50, 100, 200, 400];
  /** Edits the rows of a bill before it is made and hashed (an injected discrepancy the channel stands by). */
  editBill: (rows: WechatpayBillRow[]) => WechatpayBillRow[] = (rows) => rows;
  /** Edits the rows of the file served after hash_value was taken: a download tampered with on the way. */
  tamperDownload: ((rows: WechatpayBillRow[]) => WechatpayBillRow[]) | null = null;
  /** Passed to the bill maker (a bill without its BOM...). */
  billOptions: Partial<WechatpayBillOptions> = {};
  /** Serves a gzip bomb of this many MiB in place of the bill (tar_type=GZIP). */
  billBombMib: number | null = null;
  /** The download_url's origin (default: this gateway's); a test points it elsewhere. */
  downloadOrigin: string | null = null;
  /** One-shot faults by API, taken in order. */
  private readonly faults = new Map<WechatApi, ApiFault[]>();
  /** Bills handed out, by the token of their download_url. */
  private readonly bills = new Map<string, Buffer>();
  url = '';
  private server: Server;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    readonly mchid: string,
    readonly appid: string,
    private readonly merchantSerialNo: string,
    private readonly merchantPublicKey: string,
    private readonly apiV3Key: string,
  ) {}

  /** The newest platform certificate: the one that signs in certificate mode. */
  get certificate(): { certificate: string; privateKey: string; serial: string } {
    return this.certificates[this.certificates.length - 1];
  }

  /**
   * WeChat issues a new platform certificate: listed by /v3/certificates beside the old one, and
   * signing from now on (https://pay.weixin.qq.com/docs/merchant/development/interface-rules/wechatpay-certificates-rotation.html).
   */
  rotateCertificate(): { serial: string } {
    this.certificates.push(platformCertificate());
    return { serial: this.certificate.serial };
  }

  /** The next answer of `api` goes wrong this way (once per call; queued in order). */
  failNext(api: WechatApi, fault: ApiFault): void {
    this.faults.set(api, [...(this.faults.get(api) ?? []), fault]);
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

  /** The platform's signature headers over `TIMESTAMP\nNONCE\nBODY\n` (wechatpay-axios-plugin's Formatter.response and Rsa.sign). */
  signedHeaders(body: string, options: { timestamp?: number; signer?: 'public-key' | 'certificate' | 'forged' | 'probe' } = {}): Record<string, string> {
    const signer = options.signer ?? this.signWith;
    const key =
      signer === 'certificate'
        ? { privateKey: this.certificate.privateKey, serial: this.certificate.serial }
        : { privateKey: signer === 'forged' ? rsaKeyPair().privateKey : this.platform.privateKey, serial: this.publicKeyId };
    const headers = WechatpayOracle.signatureHeaders(body, key, options.timestamp);
    if (signer === 'probe') headers['wechatpay-signature'] = `${SIGNTEST_PREFIX}${headers['wechatpay-signature'].slice(SIGNTEST_PREFIX.length)}`;
    return headers;
  }

  private send(res: ServerResponse, status: number, value: Record<string, unknown> | null, how: { signed?: boolean } = {}): void {
    const body = value === null ? '' : JSON.stringify(value);
    const headers: Record<string, string> = { 'request-id': randomBytes(8).toString('hex'), ...(value === null ? {} : { 'content-type': 'application/json' }) };
    const probe = this.probeNextAnswer;
    const signer = this.signNextWith ?? undefined;
    this.probeNextAnswer = false;
    this.signNextWith = null;
    if (this.api !== 'unsigned' && how.signed !== false)
      Object.assign(headers, this.signedHeaders(body, { signer: probe ? 'probe' : this.api === 'bad-signature' ? 'forged' : signer }));
    res.writeHead(status, headers).end(body);
  }

  /** The merchant's signature, verified by wechatpay-axios-plugin's rule (WechatpayOracle), and the headers WeChat requires. */
  private verifyRequest(req: IncomingMessage, path: string, body: string): string | null {
    const refusal = WechatpayOracle.requestRefusal(req.method ?? '', path, body, req.headers.authorization ?? '', {
      mchid: this.mchid,
      serialNo: this.merchantSerialNo,
      publicKey: this.merchantPublicKey,
    });
    if (refusal) return refusal;
    if (req.headers.accept !== 'application/json' && !path.startsWith('/v3/billdownload/file')) return 'accept';
    if (req.headers['wechatpay-serial'] !== undefined && req.headers['wechatpay-serial'] !== this.publicKeyId) return 'wechatpay-serial';
    return null;
  }

  private route(req: IncomingMessage, res: ServerResponse, raw: string): void {
    const path = req.url ?? '/';
    const url = new URL(path, this.url);
    if (url.pathname === '/fake/scan-and-pay' && req.method === 'POST') {
      const trade = [...this.trades.values()].find((t) => t.codeUrl !== '' && t.codeUrl === new URLSearchParams(raw).get('code_url'));
      if (!trade) return void res.writeHead(404).end('unknown code_url');
      this.pay(trade.outTradeNo);
      return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<h1>支付成功</h1>');
    }
    // A browser asks every host it visits for its icon: not an API call.
    if (url.pathname === '/favicon.ico') return void res.writeHead(404).end();
    if (url.pathname === '/fake/h5' && req.method === 'GET') return this.h5Page(req, url, res);
    if (url.pathname === '/fake/h5/pay' && req.method === 'POST') return this.h5Pay(req, new URLSearchParams(raw), res);
    if (url.pathname === '/connect/oauth2/authorize' && req.method === 'GET') return this.authorize(url, res);
    if (url.pathname === '/sns/oauth2/access_token' && req.method === 'GET') return this.accessToken(url, res);
    if (this.api === 'hang') return;
    if (this.api === 'http-500') return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"code":"SYSTEM_ERROR","message":"系统错误"}');
    const why = this.verifyRequest(req, path, raw);
    if (why) {
      this.rejected.push({ path, why });
      // WeChat signs its answers once it has verified the request: this one goes unsigned.
      return this.send(res, 401, { code: 'SIGN_ERROR', message: `签名错误 ${why}` }, { signed: false });
    }
    const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : null;
    this.calls.push({ method: req.method ?? '', path, body });
    const api = this.apiOf(req.method ?? '', url.pathname);
    const fault = api ? this.faults.get(api)?.shift() : undefined;
    if (fault === 'system-error') return this.send(res, 500, { code: 'SYSTEM_ERROR', message: '系统错误' });
    if (fault === 'rate-limited') return this.send(res, 429, { code: 'FREQUENCY_LIMITED', message: '频率超限' });
    if (fault === 'system-error-after-doing' || fault === 'hang-after-doing') {
      // It does the work into a dead end: the answer is lost or says it does not know.
      this.dispatch(req, url, body, { writeHead: () => ({ end: () => undefined }) } as unknown as ServerResponse);
      if (fault === 'hang-after-doing') return;
      return this.send(res, 500, { code: 'SYSTEM_ERROR', message: '系统超时' });
    }
    // The answer is made as usual, but its signature is a probe.
    if (fault === 'probe') this.probeNextAnswer = true;
    this.dispatch(req, url, body, res);
  }

  /** Whether the next answer sent carries a signature probe instead of a signature. */
  private probeNextAnswer = false;

  private apiOf(method: string, pathname: string): WechatApi | null {
    if (method === 'POST' && pathname === '/v3/pay/transactions/native') return 'native';
    if (method === 'POST' && pathname === '/v3/pay/transactions/h5') return 'h5';
    if (method === 'POST' && pathname === '/v3/pay/transactions/jsapi') return 'jsapi';
    if (method === 'GET' && pathname === '/v3/certificates') return 'certificates';
    if (method === 'GET' && /^\/v3\/pay\/transactions\/out-trade-no\/[^/]+$/.test(pathname)) return 'query';
    if (method === 'POST' && /\/close$/.test(pathname)) return 'close';
    if (method === 'POST' && pathname === '/v3/refund/domestic/refunds') return 'refund';
    if (method === 'GET' && pathname.startsWith('/v3/refund/domestic/refunds/')) return 'refund-query';
    if (method === 'GET' && pathname === '/v3/bill/tradebill') return 'tradebill';
    return null;
  }

  private dispatch(req: IncomingMessage, url: URL, body: Record<string, unknown> | null, res: ServerResponse): void {
    let m: RegExpExecArray | null;
    if (req.method === 'GET' && url.pathname === '/v3/bill/tradebill') return this.tradebill(res, url.searchParams);
    if (req.method === 'GET' && url.pathname === '/v3/billdownload/file') {
      // The download's answer carries no signature, as WeChat's: hash_value vouches for it.
      const bill = this.bills.get(url.searchParams.get('token') ?? '');
      if (!bill) return this.send(res, 404, { code: 'RESOURCE_NOT_EXISTS', message: '账单文件不存在' });
      return void res.writeHead(200, { 'content-type': 'application/octet-stream', 'request-id': randomBytes(8).toString('hex') }).end(bill);
    }
    if (req.method === 'POST' && ORDER_APIS[url.pathname]) return this.order(ORDER_APIS[url.pathname], res, body ?? {});
    if (req.method === 'GET' && url.pathname === '/v3/certificates') return this.listCertificates(res);
    if (req.method === 'GET' && (m = /^\/v3\/pay\/transactions\/out-trade-no\/([^/]+)$/.exec(url.pathname))) {
      const trade = this.trades.get(m[1]);
      if (url.searchParams.get('mchid') !== this.mchid) return this.send(res, 400, { code: 'PARAM_ERROR', message: 'mchid' });
      if (!trade) return this.send(res, 404, { code: 'ORDER_NOT_EXIST', message: '订单不存在' });
      return this.send(res, 200, this.transaction(trade));
    }
    if (req.method === 'POST' && (m = /^\/v3\/pay\/transactions\/out-trade-no\/([^/]+)\/close$/.exec(url.pathname))) {
      const trade = this.trades.get(m[1]);
      if (body?.mchid !== this.mchid) return this.send(res, 400, { code: 'PARAM_ERROR', message: 'mchid' });
      if (trade?.state === 'SUCCESS') return this.send(res, 400, { code: 'ORDER_PAID', message: '订单已支付' });
      if (trade) trade.state = 'CLOSED';
      return this.send(res, 204, null);
    }
    if (req.method === 'POST' && url.pathname === '/v3/refund/domestic/refunds') return this.refund(res, body ?? {});
    if (req.method === 'GET' && (m = /^\/v3\/refund\/domestic\/refunds\/([^/]+)$/.exec(url.pathname))) {
      for (const trade of this.trades.values()) {
        const refund = trade.refunds.get(m[1]);
        if (refund) return this.send(res, 200, this.refundResource(trade, m[1]));
      }
      return this.send(res, 404, { code: 'RESOURCE_NOT_EXISTS', message: '退款单不存在' });
    }
    this.send(res, 404, { code: 'NOT_FOUND', message: 'no such API' });
  }

  /**
   * The three order APIs (Native, H5, JSAPI). One trade per out_trade_no: the same request again
   * answers the trade's current code_url, h5_url (a new one, valid 5 minutes) or prepay_id, the
   * payer's IP being the one field that may change (H5 下单 time_expire note:
   * https://pay.weixin.qq.com/docs/merchant/apis/h5-payment/direct-jsons/h5-prepay.html); another
   * trade type, or any other field changed, is 403 OUT_TRADE_NO_USED 商户订单号重复, as is a
   * closed trade's number.
   */
  private order(tradeType: WechatTradeType, res: ServerResponse, body: Record<string, unknown>): void {
    const path = Object.keys(ORDER_APIS).find((p) => ORDER_APIS[p] === tradeType)!;
    const amount = body.amount as { total?: unknown; currency?: unknown } | undefined;
    const scene = body.scene_info as { payer_client_ip?: unknown; h5_info?: { type?: unknown } } | undefined;
    const payer = body.payer as { openid?: unknown } | undefined;
    const problems = [
      body.appid !== this.appid && 'appid',
      body.mchid !== this.mchid && 'mchid',
      (typeof body.description !== 'string' || !body.description || [...body.description].length > 127) && 'description',
      (typeof body.out_trade_no !== 'string' || !/^[\w-]{6,32}$/.test(body.out_trade_no)) && 'out_trade_no',
      (typeof body.time_expire !== 'string' || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+08:00$/.test(body.time_expire)) && 'time_expire',
      (typeof body.notify_url !== 'string' || !/^https?:\/\//.test(body.notify_url)) && 'notify_url',
      (!Number.isInteger(amount?.total) || (amount?.total as number) < 1 || amount?.currency !== 'CNY') && 'amount',
      tradeType === 'MWEB' && (typeof scene?.payer_client_ip !== 'string' || !isIP(scene.payer_client_ip) || scene.h5_info?.type !== 'Wap') && 'scene_info',
      tradeType === 'JSAPI' && (typeof payer?.openid !== 'string' || !payer.openid) && 'payer.openid',
    ].filter(Boolean);
    if (problems.length) {
      this.rejected.push({ path, why: problems.join(',') });
      return this.send(res, 400, { code: 'PARAM_ERROR', message: `参数错误 ${problems.join(',')}` });
    }
    const outTradeNo = body.out_trade_no as string;
    const openid = tradeType === 'JSAPI' ? (payer!.openid as string) : null;
    let trade = this.trades.get(outTradeNo);
    if (trade) {
      const same =
        trade.tradeType === tradeType &&
        trade.total === amount!.total &&
        trade.description === body.description &&
        trade.timeExpire === body.time_expire &&
        trade.notifyUrl === body.notify_url &&
        trade.openid === openid;
      if (!same || trade.state === 'CLOSED') return this.send(res, 403, { code: 'OUT_TRADE_NO_USED', message: '商户订单号重复' });
    } else {
      trade = {
        outTradeNo,
        tradeType,
        total: amount!.total as number,
        description: body.description as string,
        notifyUrl: body.notify_url as string,
        timeExpire: body.time_expire as string,
        codeUrl: tradeType === 'NATIVE' ? `weixin://wxpay/bizpayurl?pr=${randomBytes(6).toString('base64url')}` : '',
        prepayId: `wx${Date.now()}${randomBytes(8).toString('hex')}`,
        openid,
        payerClientIp: null,
        h5UrlExpiresAt: 0,
        state: 'NOTPAY',
        transactionId: `42000${Date.now()}${randomBytes(3).readUIntBE(0, 3)}`.slice(0, 28),
        paidAt: null,
        refunds: new Map(),
      };
      this.trades.set(outTradeNo, trade);
    }
    if (tradeType === 'NATIVE') return this.send(res, 200, { code_url: trade.codeUrl });
    if (tradeType === 'JSAPI') return this.send(res, 200, { prepay_id: trade.prepayId });
    trade.payerClientIp = scene!.payer_client_ip as string;
    trade.h5UrlExpiresAt = Date.now() + 5 * 60_000;
    this.send(res, 200, { h5_url: `${this.url}/fake/h5?prepay_id=${trade.prepayId}&package=${randomBytes(5).readUIntBE(0, 5)}` });
  }

  /**
   * The h5_url page (WeChat's 中间页), which opens the WeChat app: it checks what WeChat checks
   * (https://pay.weixin.qq.com/docs/merchant/products/h5-payment/preparation.html, common errors):
   * the Referer's domain is the registered H5 domain ("商家参数格式有误"), the client's address
   * is the order's payer_client_ip ("网络环境未能通过安全验证"), the link is at most 5 minutes old
   * ("支付请求已失效"). Its Pay button stands for the payer confirming in WeChat; then the payer
   * goes to redirect_url.
   */
  private h5Page(req: IncomingMessage, url: URL, res: ServerResponse): void {
    const trade = [...this.trades.values()].find((t) => t.tradeType === 'MWEB' && t.prepayId === url.searchParams.get('prepay_id'));
    const refuse = (why: string): void => {
      this.payerRefusals.push({ where: 'h5', why });
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<h1 id="refused">${why}</h1>`);
    };
    if (!trade) return refuse('订单不存在');
    const referer = req.headers.referer ?? '';
    if (!this.h5Origin || !referer || new URL(referer).origin !== this.h5Origin) return refuse('商家参数格式有误，请联系商家解决');
    if (clientIp(req) !== trade.payerClientIp) return refuse('网络环境未能通过安全验证，请稍后再试');
    if (Date.now() > trade.h5UrlExpiresAt) return refuse('支付请求已失效，请重新发起支付');
    const redirect = url.searchParams.get('redirect_url') ?? '';
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(
        `<h1>微信支付</h1><p>${trade.description} ¥${(trade.total / 100).toFixed(2)}</p>` +
          `<form method="post" action="/fake/h5/pay"><input type="hidden" name="prepay_id" value="${trade.prepayId}">` +
          `<input type="hidden" name="redirect_url" value="${redirect.replace(/"/g, '&quot;')}"><button>Pay</button></form>`,
      );
  }

  private h5Pay(req: IncomingMessage, form: URLSearchParams, res: ServerResponse): void {
    const trade = [...this.trades.values()].find((t) => t.tradeType === 'MWEB' && t.prepayId === form.get('prepay_id'));
    if (!trade || clientIp(req) !== trade.payerClientIp) return void res.writeHead(404).end('no such payment');
    this.pay(trade.outTradeNo);
    const redirect = form.get('redirect_url');
    // WeChat sends the payer to redirect_url once the payment is done (or cancelled); without one, back where the payment began.
    if (redirect) return void res.writeHead(302, { location: redirect }).end();
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<h1>支付成功</h1>');
  }

  /**
   * What the stubbed WeixinJSBridge.invoke('getBrandWCPayRequest', request) does: WeChat checks the
   * paySign with the merchant's key (WechatpayOracle.jsapiRefusal), the appId, and that the prepay
   * is the payer's own, then the payer pays. Answers the err_msg WeChat gives the page.
   */
  jsapiPay(request: Record<string, unknown>, openid: string, { cancel = false }: { cancel?: boolean } = {}): string {
    const refusal = WechatpayOracle.jsapiRefusal(request, this.merchantPublicKey);
    const prepayId = String(request.package ?? '').replace(/^prepay_id=/, '');
    const trade = [...this.trades.values()].find((t) => t.tradeType === 'JSAPI' && t.prepayId === prepayId);
    const why =
      refusal ??
      (request.appId !== this.appid ? 'appId' : !trade ? 'prepay_id' : trade.openid !== openid ? 'openid' : trade.state !== 'NOTPAY' ? 'state' : null);
    if (why) {
      this.payerRefusals.push({ where: 'jsapi', why });
      return 'get_brand_wcpay_request:fail';
    }
    if (cancel) return 'get_brand_wcpay_request:cancel';
    this.pay(trade!.outTradeNo);
    return 'get_brand_wcpay_request:ok';
  }

  /** WeChat's OAuth authorize page (snsapi_base: silent): back to redirect_uri with a code for the current payer. */
  private authorize(url: URL, res: ServerResponse): void {
    const q = url.searchParams;
    const why =
      q.get('appid') !== this.appid
        ? 'appid'
        : q.get('scope') !== 'snsapi_base'
          ? 'scope'
          : q.get('response_type') !== 'code'
            ? 'response_type'
            : !q.get('redirect_uri')
              ? 'redirect_uri'
              : null;
    if (why) {
      this.payerRefusals.push({ where: 'oauth', why });
      return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<h1 id="refused">redirect_uri 参数错误 ${why}</h1>`);
    }
    const code = randomBytes(16).toString('hex');
    this.oauthCodes.set(code, { openid: this.oauthOpenid, used: false, expiresAt: Date.now() + 5 * 60_000 });
    const back = new URL(q.get('redirect_uri')!);
    back.searchParams.set('code', code);
    back.searchParams.set('state', q.get('state') ?? '');
    res.writeHead(302, { location: back.toString() }).end();
  }

  /** sns/oauth2/access_token: the code's openid, once; errcode 40125 (secret), 40029 (invalid code), 40163 (used). */
  private accessToken(url: URL, res: ServerResponse): void {
    const q = url.searchParams;
    const json = (value: Record<string, unknown>): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    if (q.get('appid') !== this.appid || q.get('grant_type') !== 'authorization_code') return json({ errcode: 40013, errmsg: 'invalid appid' });
    if (!this.appSecret || q.get('secret') !== this.appSecret) return json({ errcode: 40125, errmsg: 'invalid appsecret' });
    const code = this.oauthCodes.get(q.get('code') ?? '');
    if (!code || code.expiresAt < Date.now()) return json({ errcode: 40029, errmsg: 'invalid code' });
    if (code.used) return json({ errcode: 40163, errmsg: 'code been used' });
    code.used = true;
    json({
      access_token: randomBytes(16).toString('hex'),
      expires_in: 7200,
      refresh_token: randomBytes(16).toString('hex'),
      openid: code.openid,
      scope: 'snsapi_base',
      ...(this.snapshotUser ? { is_snapshotuser: 1 } : {}),
    });
  }

  /** GET /v3/certificates: each platform certificate in force, encrypted with the APIv3 key (associated data `certificate`). */
  private listCertificates(res: ServerResponse): void {
    this.certificateDownloads++;
    const data = this.certificates.map(({ certificate, serial }) => {
      const x509 = new X509Certificate(certificate);
      const nonce = randomBytes(6).toString('hex');
      return {
        serial_no: serial,
        effective_time: x509.validFromDate.toISOString(),
        expire_time: x509.validToDate.toISOString(),
        encrypt_certificate: {
          algorithm: 'AEAD_AES_256_GCM',
          nonce,
          associated_data: 'certificate',
          ciphertext: encryptResource(certificate, this.apiV3Key, nonce, 'certificate'),
        },
      };
    });
    // The list is signed by the newest certificate, whatever the account otherwise signs with.
    this.signNextWith = 'certificate';
    this.send(res, 200, { data });
  }

  /** The signer of the next answer, when it is not signWith (the certificate list). */
  private signNextWith: 'certificate' | null = null;

  private transaction(trade: WechatTrade): Record<string, unknown> {
    return {
      appid: this.appid,
      mchid: this.mchid,
      out_trade_no: trade.outTradeNo,
      transaction_id: trade.state === 'NOTPAY' || trade.state === 'CLOSED' ? undefined : trade.transactionId,
      trade_type: trade.tradeType,
      trade_state: trade.state,
      trade_state_desc: trade.state,
      bank_type: 'OTHERS',
      success_time: trade.state === 'SUCCESS' ? new Date().toISOString() : undefined,
      payer: { openid: trade.openid ?? 'oUpF8uMuAJO_M2pxb1Q9zNjWeS6o' },
      amount: { total: trade.total, payer_total: trade.total, currency: 'CNY', payer_currency: 'CNY' },
    };
  }

  private refund(res: ServerResponse, body: Record<string, unknown>): void {
    const trade = this.trades.get(String(body.out_trade_no));
    const amount = body.amount as { refund?: number; total?: number; currency?: string } | undefined;
    if (!trade) return this.send(res, 404, { code: 'RESOURCE_NOT_EXISTS', message: '订单不存在' });
    if (amount?.total !== trade.total || amount.currency !== 'CNY' || !Number.isInteger(amount.refund))
      return this.send(res, 400, { code: 'PARAM_ERROR', message: 'amount' });
    const outRefundNo = String(body.out_refund_no);
    if (!trade.refunds.has(outRefundNo)) {
      const refunded = [...trade.refunds.values()].filter((r) => r.status !== 'CLOSED').reduce((s, r) => s + r.amount, 0);
      if (refunded + amount.refund! > trade.total) return this.send(res, 403, { code: 'NOT_ENOUGH', message: '退款金额超过可退金额' });
      trade.refunds.set(outRefundNo, {
        refundId: `50300${Date.now()}`,
        amount: amount.refund!,
        status: this.refundState,
        notifyUrl: typeof body.notify_url === 'string' ? body.notify_url : null,
        at: new Date(),
      });
      if (this.refundState === 'SUCCESS') this.notifyRefund(trade, outRefundNo);
    }
    this.send(res, 200, this.refundResource(trade, outRefundNo));
  }

  private refundResource(trade: WechatTrade, outRefundNo: string): Record<string, unknown> {
    const refund = trade.refunds.get(outRefundNo)!;
    return {
      refund_id: refund.refundId,
      out_refund_no: outRefundNo,
      transaction_id: trade.transactionId,
      out_trade_no: trade.outTradeNo,
      channel: 'ORIGINAL',
      status: refund.status,
      create_time: new Date().toISOString(),
      amount: { total: trade.total, refund: refund.amount, payer_total: trade.total, payer_refund: refund.amount, currency: 'CNY' },
    };
  }

  /** Finishes a refund that was processing, and notifies it. */
  settleRefund(outTradeNo: string, outRefundNo: string, status: 'SUCCESS' | 'ABNORMAL' | 'CLOSED'): WechatDelivery | null {
    const trade = this.trades.get(outTradeNo)!;
    trade.refunds.get(outRefundNo)!.status = status;
    return this.notifyRefund(trade, outRefundNo);
  }

  private notifyRefund(trade: WechatTrade, outRefundNo: string): WechatDelivery | null {
    const refund = trade.refunds.get(outRefundNo)!;
    if (!refund.notifyUrl || !this.notifyRefunds) return null;
    const resource = {
      mchid: this.mchid,
      out_trade_no: trade.outTradeNo,
      transaction_id: trade.transactionId,
      out_refund_no: outRefundNo,
      refund_id: refund.refundId,
      refund_status: refund.status,
      amount: { total: trade.total, refund: refund.amount, payer_total: trade.total, payer_refund: refund.amount },
    };
    return this.deliver(refund.notifyUrl, this.notification(`REFUND.${refund.status}`, 'refund', resource));
  }

  /** The payer scans the code_url and pays: SUCCESS, then the notification (unless told otherwise). */
  pay(outTradeNo: string, how: { notify?: 'once' | 'never' | 'twice'; total?: number } = {}): WechatDelivery | null {
    const trade = this.trades.get(outTradeNo);
    if (!trade) throw new Error(`fake wechatpay: no trade ${outTradeNo}`);
    trade.state = 'SUCCESS';
    trade.paidAt = new Date();
    const notify = how.notify ?? 'once';
    if (notify === 'never') return null;
    const make = (): WechatNotification =>
      this.notification('TRANSACTION.SUCCESS', 'transaction', {
        ...this.transaction(trade),
        amount: { total: how.total ?? trade.total, payer_total: how.total ?? trade.total, currency: 'CNY', payer_currency: 'CNY' },
      });
    const first = this.deliver(trade.notifyUrl, make());
    if (notify === 'twice') this.deliver(trade.notifyUrl, make());
    return first;
  }

  /** A notification as WeChat Pay sends one: the resource encrypted with the APIv3 key, the body signed by the platform. */
  notification(
    eventType: string,
    originalType: string,
    resource: Record<string, unknown>,
    options: { apiV3Key?: string; timestamp?: number; signer?: 'public-key' | 'certificate' | 'forged' | 'probe' } = {},
  ): WechatNotification {
    const nonce = randomBytes(6).toString('hex');
    const associatedData = originalType;
    const body = JSON.stringify({
      id: randomBytes(16).toString('hex'),
      create_time: new Date().toISOString(),
      resource_type: 'encrypt-resource',
      event_type: eventType,
      summary: eventType.startsWith('REFUND') ? '退款成功' : '支付成功',
      resource: {
        original_type: originalType,
        algorithm: 'AEAD_AES_256_GCM',
        ciphertext: encryptResource(JSON.stringify(resource), options.apiV3Key ?? this.apiV3Key, nonce, associatedData),
        associated_data: associatedData,
        nonce,
      },
    });
    return { body, headers: { 'content-type': 'application/json', ...this.signedHeaders(body, options) } };
  }

  /** Sends a notification and again on the retry schedule while the answer is not 200/204. */
  deliver(notifyUrl: string, notification: WechatNotification): WechatDelivery {
    const delivery: WechatDelivery = { notification, answers: [] };
    this.deliveries.push(delivery);
    const attempt = async (n: number): Promise<void> => {
      const answer = await this.post(notifyUrl, notification).catch(() => ({ status: 0, body: '' }));
      delivery.answers.push(answer);
      if (answer.status === 200 || answer.status === 204 || n >= this.retryGapsMs.length) return;
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        void attempt(n + 1);
      }, this.retryGapsMs[n]);
      this.timers.add(timer);
    };
    void attempt(0);
    return delivery;
  }

  async post(notifyUrl: string, notification: WechatNotification): Promise<{ status: number; body: string }> {
    const res = await fetch(notifyUrl, { method: 'POST', headers: notification.headers, body: notification.body });
    return { status: res.status, body: await res.text() };
  }

  /** GET /v3/bill/tradebill: the day's bill made now, kept behind a download_url on this gateway, with the SHA1 of the unzipped file. */
  private tradebill(res: ServerResponse, query: URLSearchParams): void {
    const date = query.get('bill_date') ?? '';
    const type = query.get('bill_type') ?? 'ALL';
    const tar = query.get('tar_type');
    if (!/^\d{4}-\d\d-\d\d$/.test(date) || !['ALL', 'SUCCESS', 'REFUND'].includes(type) || (tar !== null && tar !== 'GZIP')) {
      return this.send(res, 400, { code: 'PARAM_ERROR', message: '参数错误' });
    }
    const rows = this.editBill(this.billRows(date));
    // WeChat Pay makes no bill for a day without a trade: 400 NO_STATEMENT_EXIST.
    if (rows.length === 0) return this.send(res, 400, { code: 'NO_STATEMENT_EXIST', message: '账单文件不存在' });
    const options = { mchid: this.mchid, appid: this.appid, gzip: tar === 'GZIP', ...this.billOptions };
    const bill = wechatpayTradeBill(rows, options);
    const served =
      this.billBombMib !== null ? gzipBomb(this.billBombMib) : this.tamperDownload ? wechatpayTradeBill(this.tamperDownload(rows), options).raw : bill.raw;
    const token = randomBytes(12).toString('base64url');
    this.bills.set(token, served);
    this.send(res, 200, {
      hash_type: bill.hashType,
      hash_value: bill.hashValue,
      download_url: `${this.downloadOrigin ?? this.url}/v3/billdownload/file?token=${token}&tartype=${tar ?? ''}`,
    });
  }

  /** What was paid and refunded on a Beijing day, as the ALL bill lists it, with WeChat's 0.6% fee (returned pro rata on a refund). */
  billRows(date: string): WechatpayBillRow[] {
    const beijing = (at: Date): string => new Date(at.getTime() + 8 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');
    const yuan = (fen: number, places = 2): string => `${fen < 0 ? '-' : ''}${(Math.abs(fen) / 100).toFixed(2)}${'0'.repeat(places - 2)}`;
    const fee = (fen: number): number => Math.round(fen * 0.006);
    const refundState = { SUCCESS: 'SUCCESS', PROCESSING: 'PROCESSING', ABNORMAL: 'CHANGE', CLOSED: 'REFUNDCLOSE' } as const;
    const rows: WechatpayBillRow[] = [];
    for (const trade of this.trades.values()) {
      const common = { transactionId: trade.transactionId, orderNo: trade.outTradeNo, subject: trade.description, total: yuan(trade.total) };
      if (trade.paidAt && beijing(trade.paidAt).startsWith(date))
        rows.push({ ...common, time: beijing(trade.paidAt), state: 'SUCCESS', settled: yuan(trade.total), fee: yuan(fee(trade.total), 5) });
      for (const [refundNo, refund] of trade.refunds) {
        if (!beijing(refund.at).startsWith(date)) continue;
        rows.push({
          ...common,
          time: beijing(refund.at),
          state: 'REFUND',
          settled: '0.00',
          refundId: refund.refundId,
          refundNo,
          refundAmount: yuan(refund.amount),
          refundState: refundState[refund.status],
          fee: yuan(-fee(refund.amount), 5),
        });
      }
    }
    return rows;
  }
}
