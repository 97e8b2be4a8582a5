import { X509Certificate, createPublicKey, createSign, createVerify, type KeyObject, randomBytes } from 'node:crypto';
import type { Dispatcher } from 'undici';
import {
  type BillOperations,
  type CashierOperations,
  type CashierPayer,
  type CashierUrl,
  type ChannelAdapter,
  type ChannelNotification,
  ChannelError,
  type CloseOutcome,
  type NotificationAnswers,
  type NotificationContext,
  type PaymentCreated,
  type PaymentQuery,
  type PaymentRequest,
  type PaymentStatus,
  type PayerIdentity,
  type Prepay,
  type RefundOperations,
  type RefundRequest,
  type RefundStatus,
} from '../channel-adapter';
import { type ChannelConfig, assertGatewayProtocol } from '../channel-config';
import { type ChannelAnswer, channelDownload, channelFetch } from '../channel-http';
import { type PayMode, type WechatMode, channelPayModes } from '../pay-modes';
import { PlatformCertificates } from './wechatpay-certificates';
import { CLOSED_ALREADY, CLOSE_REFUSALS, REFUND_REFUSALS, REFUND_STATUS_REFUSALS, classify } from './wechatpay-answers';
import {
  type RefundResource,
  type Transaction,
  WECHATPAY_CLOCK_SKEW_SECONDS,
  WECHATPAY_GATEWAY,
  decryptResource,
  errorCode,
  fen,
  header,
  isObject,
  rfc3339Beijing,
  signedMessage,
  text,
  wechatWords,
  wechatpayAuthorization,
} from './wechatpay-wire';

/**
 * The order APIs of the three modes and how long what each answers can be used (never past the
 * order's own expiry): Native's code_url 2 hours
 * (https://pay.weixin.qq.com/docs/merchant/apis/native-payment/direct-jsons/native-prepay.html),
 * H5's h5_url 5 minutes (https://pay.weixin.qq.com/docs/merchant/apis/h5-payment/direct-jsons/h5-prepay.html:
 * "h5_url有效期为5分钟"), JSAPI's prepay_id 2 hours
 * (https://pay.weixin.qq.com/docs/merchant/apis/jsapi-payment/direct-jsons/jsapi-prepay.html).
 */
const PREPAYS: Record<WechatMode, { path: string; answer: 'code_url' | 'h5_url' | 'prepay_id'; lifetimeMs: number }> = {
  native: { path: '/v3/pay/transactions/native', answer: 'code_url', lifetimeMs: 2 * 3600_000 },
  h5: { path: '/v3/pay/transactions/h5', answer: 'h5_url', lifetimeMs: 5 * 60_000 },
  jsapi: { path: '/v3/pay/transactions/jsapi', answer: 'prepay_id', lifetimeMs: 2 * 3600_000 },
};

/** WeChat's web OAuth (https://developers.weixin.qq.com/doc/offiaccount/OA_Web_Apps/Wechat_webpage_authorization.html). */
const OAUTH_AUTHORIZE = 'https://open.weixin.qq.com';
const OAUTH_API = 'https://api.weixin.qq.com';

/** `description` is string(127) in every order API ("不能超过127个字符"). */
const DESCRIPTION_MAX = 127;

/**
 * WeChat Pay API v3 (SPEC 6), over node:crypto, in public-key or platform-certificate mode:
 * `pay_url` is the service's cashier, which asks for the payer's device's mode (Native QR code,
 * H5, JSAPI after WeChat's OAuth) and keeps its prepay; signed requests; answers and
 * notifications verified with the platform public key or the platform certificate named by
 * Wechatpay-Serial (fixed in the config during a switch, or fetched from /v3/certificates);
 * AEAD_AES_256_GCM resources; query, close, refund, refund query and the bill. This file is the
 * flow; the wire is wechatpay-wire.ts, the refusal codes wechatpay-answers.ts, the fetched
 * certificates wechatpay-certificates.ts.
 */
export class WechatpayAdapter implements ChannelAdapter {
  readonly acknowledgement = '';
  readonly paidIsFinal = true;
  readonly notificationIsJsonDocument = true;
  /** WeChat Pay: 204 once handled; anything else, with {"code":"FAIL"}, makes it send again. */
  readonly notificationAnswers: NotificationAnswers = {
    accepted: () => ({ status: 204, contentType: null, body: '' }),
    refused: (status, message) => ({
      status: status >= 400 ? status : 400,
      contentType: 'application/json; charset=utf-8',
      body: JSON.stringify({ code: 'FAIL', message }),
    }),
  };

  readonly cashier: CashierOperations;

  constructor(
    private readonly config: ChannelConfig,
    private readonly cashierUrl: CashierUrl,
    /** The channel's notify URL: refund notifications come there too. */
    private readonly notifyUrl: string,
    /** Platform-certificate mode (no platform_public_key): the channel's fetched certificates, kept across calls. */
    private readonly certificates: PlatformCertificates | null,
    private readonly dispatcher: Dispatcher | undefined,
    private readonly allowHttpGateway = false,
  ) {
    this.cashier = {
      modes: channelPayModes('wechatpay', config),
      prepay: (mode, request, payer, signal) => this.prepay(mode, request, payer, signal),
      step: (mode, _request, prepay, back) => this.step(mode, prepay, back),
      payerIdentity: config.app_secret ? this.oauth(config.app_secret) : undefined,
    };
  }

  /** Platform-certificate mode: the merchant's account has no platform public key, its certificates are fetched. */
  private get certificateMode(): boolean {
    return !this.config.platform_public_key;
  }

  private settings(): { mchid: string; appid: string; serialNo: string; privateKey: string; gateway: URL } {
    const { mchid, appid, merchant_serial_no: serialNo, private_key: privateKey } = this.config;
    if (!mchid || !appid || !serialNo || !privateKey) throw new ChannelError('wechatpay channel needs mchid, appid, merchant_serial_no and private_key');
    const gateway = new URL(this.config.gateway ?? WECHATPAY_GATEWAY);
    try {
      assertGatewayProtocol(gateway, this.allowHttpGateway);
    } catch (err) {
      throw new ChannelError(`wechatpay ${(err as Error).message}`);
    }
    return { mchid, appid, serialNo, privateKey, gateway };
  }

  /** The platform key WeChat Pay signed with: its public key by id, or one of its certificates by serial (the config's, else the fetched ones). */
  private platformKey(serial: string | null): KeyObject | null {
    if (!serial) return null;
    try {
      if (serial === this.config.platform_public_key_id && this.config.platform_public_key) return createPublicKey(this.config.platform_public_key);
      const certificate = this.config.platform_certificates?.[serial.toUpperCase()];
      if (certificate) return new X509Certificate(certificate).publicKey;
      return this.certificates?.key(serial) ?? null;
    } catch {
      return null;
    }
  }

  /** Platform-certificate mode: the certificates are fetched when due, or when `headers` name one not held. */
  private async holdPlatformKey(headers: Record<string, string | string[] | undefined>, signal: AbortSignal): Promise<void> {
    if (!this.certificateMode || !this.certificates) return;
    await this.certificates.ensure(header(headers, 'wechatpay-serial'), () => this.send('GET', '/v3/certificates', null, signal));
  }

  /** A WeChat Pay signature (answers and notifications): `TIMESTAMP\nNONCE\nBODY\n`, the key chosen by Wechatpay-Serial. */
  private verifiedSignature(headers: Record<string, string | string[] | undefined>, body: string, checkClock: boolean): boolean {
    const timestamp = header(headers, 'wechatpay-timestamp');
    const nonce = header(headers, 'wechatpay-nonce');
    const signature = header(headers, 'wechatpay-signature');
    const key = this.platformKey(header(headers, 'wechatpay-serial'));
    if (!timestamp || !/^\d{1,12}$/.test(timestamp) || !nonce || !signature || !key) return false;
    if (checkClock && Math.abs(Math.floor(Date.now() / 1000) - Number(timestamp)) > WECHATPAY_CLOCK_SKEW_SECONDS) return false;
    try {
      return createVerify('RSA-SHA256')
        .update(signedMessage(timestamp, nonce, body), 'utf8')
        .verify(key, signature, 'base64');
    } catch {
      return false;
    }
  }

  /**
   * One signed API v3 call. Every answer but a 5xx (unknown whatever it says) must carry a valid
   * platform signature: WeChat signs what it answers once it has verified our request, so an
   * unsigned answer (a 401 SIGN_ERROR, a signature probe, something on the way) is a ChannelError
   * reporting its code and message: an outcome not stated.
   */
  private async call(method: 'GET' | 'POST', path: string, body: Record<string, unknown> | null, signal: AbortSignal): Promise<ChannelAnswer> {
    const answer = await this.send(method, path, body, signal);
    const what = `wechatpay ${method} ${path.split('?')[0]}`;
    if (answer.status >= 500) throw new ChannelError(`${what}: ${wechatWords(answer)}`);
    if (header(answer.headers, 'wechatpay-signature')) await this.holdPlatformKey(answer.headers, signal);
    if (!this.verifiedSignature(answer.headers, answer.body, false)) {
      if (!header(answer.headers, 'wechatpay-signature')) throw new ChannelError(`${what}: ${wechatWords(answer)} (unsigned answer, outcome unknown)`);
      throw new ChannelError(`${what} answer signature does not verify`);
    }
    return answer;
  }

  /** One signed API v3 request, its answer as it came (call() verifies it). */
  private async send(method: 'GET' | 'POST', path: string, body: Record<string, unknown> | null, signal: AbortSignal): Promise<ChannelAnswer> {
    const settings = this.settings();
    const text = body === null ? '' : JSON.stringify(body);
    return channelFetch(
      new URL(path, settings.gateway).toString(),
      {
        method,
        headers: {
          accept: 'application/json',
          'user-agent': 'merchant-pay',
          authorization: wechatpayAuthorization(
            { method, path, body: text },
            { mchid: settings.mchid, serialNo: settings.serialNo, privateKey: settings.privateKey },
          ),
          ...(this.config.platform_public_key_id ? { 'wechatpay-serial': this.config.platform_public_key_id } : {}),
          ...(body === null ? {} : { 'content-type': 'application/json' }),
        },
        body: body === null ? undefined : text,
      },
      this.dispatcher,
      signal,
    );
  }

  private json<T>(answer: ChannelAnswer, what: string): T {
    try {
      const parsed = JSON.parse(answer.body) as unknown;
      if (isObject(parsed)) return parsed as T;
    } catch {
      // fall through
    }
    throw new ChannelError(`wechatpay ${what} answered something other than a JSON object`);
  }

  /**
   * pay_url is the cashier's (SPEC 6): no trade is opened yet, for the payer's device decides its
   * type and WeChat keeps one trade type per out_trade_no. The keys are read now, so a channel
   * that cannot sign fails the order at creation (50200).
   */
  async createPayment(request: PaymentRequest): Promise<PaymentCreated> {
    this.settings();
    return { payUrl: this.cashierUrl(request.orderNo), channelTradeNo: null };
  }

  /**
   * The order API of `mode` (PREPAYS). Every call for one order sends the same fields but the
   * payer's IP (H5 and Native "使用原参数重新请求下单接口" give the trade's current code_url or
   * h5_url; any other field changed is 201 商户订单号重复), so asking again is never a second trade.
   */
  private async prepay(mode: PayMode, request: PaymentRequest, payer: CashierPayer, signal: AbortSignal): Promise<Prepay> {
    const api = PREPAYS[mode as WechatMode];
    if (!api) throw new ChannelError(`wechatpay has no ${mode} pay`);
    if (mode === 'jsapi' && !payer.openid) throw new ChannelError("wechatpay jsapi needs the payer's openid");
    const { mchid, appid } = this.settings();
    const answer = await this.call(
      'POST',
      api.path,
      {
        appid,
        mchid,
        description: [...request.subject].slice(0, DESCRIPTION_MAX).join(''),
        out_trade_no: request.orderNo,
        time_expire: rfc3339Beijing(request.expiresAt),
        notify_url: request.notifyUrl,
        amount: { total: request.amountFen, currency: 'CNY' },
        ...(mode === 'h5' ? { scene_info: { payer_client_ip: payer.ip, h5_info: { type: 'Wap' } } } : {}),
        ...(mode === 'jsapi' ? { payer: { openid: payer.openid } } : {}),
      },
      signal,
    );
    if (answer.status !== 200) throw new ChannelError(`wechatpay ${mode} pay refused: ${wechatWords(answer)}`);
    const value = text(this.json<Record<string, unknown>>(answer, `${mode} pay`)[api.answer]);
    if (!value || !this.usable(api.answer, value)) throw new ChannelError(`wechatpay ${mode} pay answered without a ${api.answer}`);
    return { value, validUntil: new Date(Math.min(Date.now() + api.lifetimeMs, request.expiresAt.getTime())) };
  }

  /** code_url is a weixin:// link; h5_url a web page of WeChat's (https, or the test gateway's http); prepay_id a plain id. */
  private usable(kind: 'code_url' | 'h5_url' | 'prepay_id', value: string): boolean {
    if (kind === 'code_url') return /^weixin:\/\/\S+$/.test(value);
    if (kind === 'prepay_id') return /^[\w-]{1,128}$/.test(value);
    try {
      const url = new URL(value);
      return url.protocol === 'https:' || (this.allowHttpGateway && url.protocol === 'http:');
    } catch {
      return false;
    }
  }

  /**
   * What the page does with a prepay: the QR code of code_url; h5_url with redirect_url (where
   * WeChat sends the payer after paying or cancelling), opened by a link that sends the Referer
   * WeChat checks against the registered H5 domain; JSAPI's getBrandWCPayRequest argument, paySign
   * RSA-SHA256 over appId, timeStamp, nonceStr and package, one per line
   * (https://pay.weixin.qq.com/docs/merchant/apis/jsapi-payment/jsapi-transfer-payment.html).
   */
  private step(mode: PayMode, prepay: Prepay | null, back: { returnUrl: string }) {
    if (!prepay) throw new ChannelError(`wechatpay ${mode} pay needs its prepay`);
    switch (mode) {
      case 'native':
        return { kind: 'qr' as const, codeUrl: prepay.value };
      case 'h5': {
        const url = `${prepay.value}${prepay.value.includes('?') ? '&' : '?'}redirect_url=${encodeURIComponent(back.returnUrl)}`;
        return { kind: 'link' as const, url, sendsReferrer: true };
      }
      case 'jsapi': {
        const { appid, privateKey } = this.settings();
        const request = {
          appId: appid,
          timeStamp: String(Math.floor(Date.now() / 1000)),
          nonceStr: randomBytes(16).toString('hex'),
          package: `prepay_id=${prepay.value}`,
        };
        const paySign = createSign('RSA-SHA256')
          .update(`${request.appId}\n${request.timeStamp}\n${request.nonceStr}\n${request.package}\n`, 'utf8')
          .sign(privateKey, 'base64');
        return { kind: 'jsapi' as const, request: { ...request, signType: 'RSA', paySign } };
      }
      default:
        throw new ChannelError(`wechatpay has no ${mode} pay`);
    }
  }

  /** The payer's openid under appid: WeChat's web OAuth with scope snsapi_base (silent), its code exchanged with the AppSecret. */
  private oauth(appSecret: string): PayerIdentity {
    const base = (fallback: string): URL => {
      const url = new URL(this.config.oauth_gateway ?? fallback);
      try {
        assertGatewayProtocol(url, this.allowHttpGateway);
      } catch (err) {
        throw new ChannelError(`wechatpay oauth_${(err as Error).message.replace(/^config\./, '')}`);
      }
      return url;
    };
    return {
      // The parameters in the order WeChat's page lists them; #wechat_redirect ends it.
      authorizeUrl: (redirectUri, state) =>
        `${new URL('/connect/oauth2/authorize', base(OAUTH_AUTHORIZE))}?appid=${encodeURIComponent(this.config.appid ?? '')}` +
        `&redirect_uri=${encodeURIComponent(redirectUri)}&response_type=code&scope=snsapi_base&state=${encodeURIComponent(state)}#wechat_redirect`,
      openid: async (code, signal) => {
        const url = new URL('/sns/oauth2/access_token', base(OAUTH_API));
        url.search = new URLSearchParams({ appid: this.config.appid ?? '', secret: appSecret, code, grant_type: 'authorization_code' }).toString();
        const answer = await channelFetch(url.toString(), { method: 'GET', headers: { accept: 'application/json' } }, this.dispatcher, signal);
        let parsed: Record<string, unknown>;
        try {
          parsed = JSON.parse(answer.body) as Record<string, unknown>;
        } catch {
          throw new ChannelError(`wechat oauth answered HTTP ${answer.status} without JSON`);
        }
        // 40163 "code been used": the page was reloaded with the code it came back with.
        if (parsed.errcode === 40163) return null;
        if (parsed.errcode !== undefined && parsed.errcode !== 0)
          throw new ChannelError(
            `wechat oauth ${String(parsed.errcode).slice(0, 12)} ${String(parsed.errmsg ?? '')
              .replace(/\p{Cc}/gu, ' ')
              .slice(0, 100)}`,
          );
        const openid = text(parsed.openid);
        if (!openid || !/^[\w-]{1,128}$/.test(openid)) throw new ChannelError('wechat oauth answered without an openid');
        return { openid, snapshot: parsed.is_snapshotuser === 1 };
      },
    };
  }

  async verifyNotification(_params: Record<string, unknown>, context?: NotificationContext): Promise<ChannelNotification | null> {
    const { apiv3_key: apiV3Key, mchid, appid } = this.config;
    if (!context?.rawBody || !apiV3Key || !mchid) return null;
    try {
      await this.holdPlatformKey(context.headers, AbortSignal.timeout(8000));
    } catch {
      return null;
    }
    if (!this.verifiedSignature(context.headers, context.rawBody, true)) return null;
    let envelope: unknown;
    try {
      envelope = JSON.parse(context.rawBody);
    } catch {
      return null;
    }
    if (!isObject(envelope) || !isObject(envelope.resource) || envelope.resource.algorithm !== 'AEAD_AES_256_GCM') return null;
    const { ciphertext, nonce, associated_data: associatedData } = envelope.resource;
    if (typeof ciphertext !== 'string' || typeof nonce !== 'string' || (associatedData !== undefined && typeof associatedData !== 'string')) return null;
    const plain = decryptResource({ ciphertext, nonce, associated_data: associatedData }, apiV3Key);
    if (plain === null) return null;
    let resource: unknown;
    try {
      resource = JSON.parse(plain);
    } catch {
      return null;
    }
    if (!isObject(resource) || resource.mchid !== mchid) return null;
    if (envelope.event_type === 'TRANSACTION.SUCCESS') return this.paymentNotification(resource as Transaction, appid);
    if (typeof envelope.event_type === 'string' && envelope.event_type.startsWith('REFUND.')) return this.refundNotification(resource as RefundResource);
    return null;
  }

  private paymentNotification(transaction: Transaction, appid: string | undefined): ChannelNotification | null {
    if (transaction.appid !== appid || transaction.trade_state !== 'SUCCESS') return null;
    const orderNo = text(transaction.out_trade_no);
    const amountFen = fen(transaction.amount?.total);
    if (!orderNo || amountFen === null) return null;
    return { orderNo, channelTradeNo: text(transaction.transaction_id), amountFen, outcome: 'paid' };
  }

  private refundNotification(resource: RefundResource): ChannelNotification | null {
    const orderNo = text(resource.out_trade_no);
    const refundNo = text(resource.out_refund_no);
    const amountFen = fen(resource.amount?.refund);
    if (!orderNo || !refundNo || amountFen === null) return null;
    const status = resource.refund_status;
    if (status !== 'SUCCESS' && status !== 'CLOSED' && status !== 'ABNORMAL') return null;
    return {
      orderNo,
      channelTradeNo: null,
      amountFen,
      outcome: 'paid',
      refund: { refundNo, outcome: status === 'SUCCESS' ? 'succeeded' : 'failed', channelRefundNo: text(resource.refund_id) },
    };
  }

  async queryPayment(query: PaymentQuery, signal: AbortSignal): Promise<PaymentStatus> {
    const { mchid, appid } = this.settings();
    const answer = await this.call('GET', `/v3/pay/transactions/out-trade-no/${query.orderNo}?mchid=${encodeURIComponent(mchid)}`, null, signal);
    if (answer.status === 404) return { state: 'unpaid', amountFen: null, channelTradeNo: null };
    if (answer.status !== 200) throw new ChannelError(`wechatpay query: ${wechatWords(answer)}`);
    const transaction = this.json<Transaction>(answer, 'query');
    if (transaction.out_trade_no !== query.orderNo || transaction.mchid !== mchid || transaction.appid !== appid) {
      throw new ChannelError('wechatpay query answered about another trade');
    }
    const channelTradeNo = text(transaction.transaction_id);
    // CLOSED, NOTPAY, USERPAYING, PAYERROR, REVOKED: nothing to count; REFUND means it was paid and then refunded.
    if (transaction.trade_state !== 'SUCCESS' && transaction.trade_state !== 'REFUND') return { state: 'unpaid', amountFen: null, channelTradeNo };
    return { state: 'paid', amountFen: fen(transaction.amount?.total), channelTradeNo };
  }

  /** Closed (204), or nothing payable left (ORDER_CLOSED, ORDER_NOT_EXIST); a documented refusal (paid meanwhile); else unknown. */
  async closePayment(query: PaymentQuery, signal: AbortSignal): Promise<CloseOutcome> {
    const { mchid } = this.settings();
    const answer = await this.call('POST', `/v3/pay/transactions/out-trade-no/${query.orderNo}/close`, { mchid }, signal);
    if (answer.status >= 400 && CLOSED_ALREADY.has(errorCode(answer) ?? '')) return { state: 'closed' };
    const read = classify(answer, CLOSE_REFUSALS);
    if (read.class === 'done') return { state: 'closed' };
    if (read.class === 'refused') return { state: 'refused', refusal: read.refusal };
    throw new ChannelError(`wechatpay close: ${read.words}`);
  }

  /**
   * `POST /v3/refund/domestic/refunds` with our refund_no as out_refund_no (WeChat refunds once
   * per out_refund_no), naming the payment's total (the order's amount). A signed 4xx whose code
   * the page lists as a refusal fails it; SYSTEM_ERROR, FREQUENCY_LIMITED and the rest are unknown.
   */
  readonly refunds: RefundOperations = {
    refund: async (request, signal) => {
      const answer = await this.call(
        'POST',
        '/v3/refund/domestic/refunds',
        {
          out_trade_no: request.orderNo,
          out_refund_no: request.refundNo,
          notify_url: this.notifyUrl,
          amount: { refund: request.amountFen, total: request.orderAmountFen, currency: 'CNY' },
        },
        signal,
      );
      const read = classify(answer, REFUND_REFUSALS);
      if (read.class === 'refused') return { state: 'failed', channelRefundNo: null, refusal: read.refusal };
      if (read.class === 'unknown') throw new ChannelError(`wechatpay refund: ${read.words}`);
      return this.refundStatus(this.json<RefundResource>(answer, 'refund'), request);
    },
    queryRefund: (request, signal) => this.queryRefund(request, signal),
  };

  private async queryRefund(request: RefundRequest, signal: AbortSignal): Promise<RefundStatus> {
    const answer = await this.call('GET', `/v3/refund/domestic/refunds/${request.refundNo}`, null, signal);
    if (answer.status === 404 && errorCode(answer) === 'RESOURCE_NOT_EXISTS') return { state: 'not_found', channelRefundNo: null };
    if (answer.status !== 200) throw new ChannelError(`wechatpay refund query: ${wechatWords(answer)}`);
    return this.refundStatus(this.json<RefundResource>(answer, 'refund query'), request);
  }

  /**
   * SUCCESS is done, CLOSED (the page's 退款关闭) is refused; ABNORMAL (the money could not reach
   * the payer's account) stays processing: WeChat holds it until the merchant retries it in its
   * platform, so giving the merchant's balance back here could pay the refund twice.
   */
  private refundStatus(resource: RefundResource, request: RefundRequest): RefundStatus {
    if (resource.out_refund_no !== request.refundNo) throw new ChannelError('wechatpay answered about another refund');
    const channelRefundNo = text(resource.refund_id);
    switch (resource.status) {
      case 'SUCCESS':
        if (fen(resource.amount?.refund) !== request.amountFen) throw new ChannelError('wechatpay reports another refund amount');
        return { state: 'succeeded', channelRefundNo };
      case 'CLOSED':
        return { state: 'failed', channelRefundNo, refusal: REFUND_STATUS_REFUSALS.refusal('CLOSED', 'wechatpay: refund closed')! };
      case 'PROCESSING':
      case 'ABNORMAL':
        return { state: 'processing', channelRefundNo };
      default:
        throw new ChannelError(`wechatpay refund answered an unknown status ${JSON.stringify(resource.status)?.slice(0, 20)}`);
    }
  }

  /**
   * The trade bill: `GET /v3/bill/tradebill` (bill_type=ALL, gzipped: a day's bill shrinks
   * tenfold) answers, signed, a download_url and the bill's hash; the download is a signed GET
   * too but its answer is not signed (WeChat's docs), so hash_value, checked by the parser on the
   * unzipped bill, is what vouches for the bytes. The URL must be on the gateway's host over https
   * (http only for a plain-http test gateway, CHANNEL_ALLOW_HTTP): our signed Authorization goes
   * nowhere else.
   */
  readonly bills: BillOperations = {
    fetchBill: async (request, signal) => {
      const answer = await this.call('GET', `/v3/bill/tradebill?bill_date=${encodeURIComponent(request.date)}&bill_type=ALL&tar_type=GZIP`, null, signal);
      if (answer.status === 400 && errorCode(answer) === 'NO_STATEMENT_EXIST')
        return { format: 'wechatpay', raw: Buffer.alloc(0), noBill: 'wechatpay NO_STATEMENT_EXIST' };
      if (answer.status !== 200) throw new ChannelError(`wechatpay tradebill: ${wechatWords(answer)}`);
      const bill = this.json<{ hash_type?: unknown; hash_value?: unknown; download_url?: unknown }>(answer, 'tradebill');
      const hashType = text(bill.hash_type);
      const hashValue = text(bill.hash_value);
      const downloadUrl = text(bill.download_url);
      if (!hashType || !hashValue || !downloadUrl) throw new ChannelError('wechatpay tradebill answered without download_url, hash_type and hash_value');
      const settings = this.settings();
      let url: URL;
      try {
        url = new URL(downloadUrl);
      } catch {
        throw new ChannelError('wechatpay tradebill answered a download_url that is not a URL');
      }
      if (url.host !== settings.gateway.host || (url.protocol !== 'https:' && url.origin !== settings.gateway.origin))
        throw new ChannelError('wechatpay tradebill answered a download_url off the gateway or not over https');
      const path = `${url.pathname}${url.search}`;
      const download = await channelDownload(
        url.toString(),
        {
          accept: 'application/json',
          'user-agent': 'merchant-pay',
          authorization: wechatpayAuthorization(
            { method: 'GET', path, body: '' },
            { mchid: settings.mchid, serialNo: settings.serialNo, privateKey: settings.privateKey },
          ),
        },
        this.dispatcher,
        signal,
      );
      if (download.status !== 200) throw new ChannelError(`wechatpay bill download answered HTTP ${download.status}`);
      return { format: 'wechatpay', raw: download.body, digest: { type: hashType, value: hashValue } };
    },
  };
}
