import { X509Certificate, createDecipheriv, createPublicKey, createSign, createVerify, randomBytes, type KeyObject } from 'node:crypto';
import type { Dispatcher } from 'undici';
import {
  type BillOperations,
  type ChannelAdapter,
  type ChannelNotification,
  ChannelError,
  type NotificationAnswers,
  type NotificationContext,
  type PaymentCreated,
  type PaymentQuery,
  type PaymentRequest,
  type PaymentStatus,
  type RefundOperations,
  type RefundRequest,
  type RefundStatus,
} from './channel-adapter';
import { type ChannelConfig, assertGatewayProtocol } from './channel-config';
import { type ChannelAnswer, channelDownload, channelFetch } from './channel-http';

export const WECHATPAY_GATEWAY = 'https://api.mch.weixin.qq.com';
/** WeChat Pay refuses (and so do we) a signed message older or newer than 5 minutes. */
export const WECHATPAY_CLOCK_SKEW_SECONDS = 300;

/** The service's own page showing a native payment's code_url as a QR code (SPEC 6); its token carries the code_url, sealed to one order. */
export type WechatPayPageUrl = (orderNo: string, codeUrl: string) => string;

/** RFC 3339 in Beijing time, as WeChat Pay writes time_expire: 2026-01-01T12:00:00+08:00. */
export function rfc3339Beijing(at: Date): string {
  return `${new Date(at.getTime() + 8 * 3600_000).toISOString().slice(0, 19)}+08:00`;
}

/** The Authorization header of one API v3 request: RSA-SHA256 of `METHOD\nPATH\nTIMESTAMP\nNONCE\nBODY\n`. */
export function wechatpayAuthorization(
  request: { method: string; path: string; body: string },
  merchant: { mchid: string; serialNo: string; privateKey: string },
  timestamp = Math.floor(Date.now() / 1000),
  nonce = randomBytes(16).toString('hex'),
): string {
  const message = `${request.method}\n${request.path}\n${timestamp}\n${nonce}\n${request.body}\n`;
  const signature = createSign('RSA-SHA256').update(message, 'utf8').sign(merchant.privateKey, 'base64');
  return `WECHATPAY2-SHA256-RSA2048 mchid="${merchant.mchid}",nonce_str="${nonce}",signature="${signature}",timestamp="${timestamp}",serial_no="${merchant.serialNo}"`;
}

/** AEAD_AES_256_GCM of a notification's resource: the ciphertext's last 16 bytes are the tag. Null when it does not authenticate. */
export function decryptResource(resource: { ciphertext: string; nonce: string; associated_data?: string }, apiV3Key: string): string | null {
  try {
    const data = Buffer.from(resource.ciphertext, 'base64');
    if (data.length < 17) return null;
    const decipher = createDecipheriv('aes-256-gcm', Buffer.from(apiV3Key, 'utf8'), Buffer.from(resource.nonce, 'utf8'));
    decipher.setAuthTag(data.subarray(data.length - 16));
    decipher.setAAD(Buffer.from(resource.associated_data ?? '', 'utf8'));
    return Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | null {
  const value = headers[name.toLowerCase()];
  return typeof value === 'string' ? value : null;
}

interface Transaction {
  appid?: unknown;
  mchid?: unknown;
  out_trade_no?: unknown;
  transaction_id?: unknown;
  trade_state?: unknown;
  amount?: { total?: unknown };
}

interface RefundResource {
  mchid?: unknown;
  out_trade_no?: unknown;
  out_refund_no?: unknown;
  refund_id?: unknown;
  refund_status?: unknown;
  status?: unknown;
  amount?: { refund?: unknown };
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const text = (value: unknown): string | null => (typeof value === 'string' && value ? value : null);
const fen = (value: unknown): number | null => (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null);

/** WeChat Pay's error answer, short and printable, for operators. */
/** The `code` of an error answer (`{"code": "...", "message": "..."}`), or null. */
function errorCode(answer: ChannelAnswer): string | null {
  try {
    const parsed = JSON.parse(answer.body) as { code?: unknown };
    return typeof parsed.code === 'string' ? parsed.code : null;
  } catch {
    return null;
  }
}

function refusal(answer: ChannelAnswer): string {
  let detail: string;
  try {
    const parsed = JSON.parse(answer.body) as { code?: unknown; message?: unknown };
    detail = `${String(parsed.code)} ${String(parsed.message ?? '')}`;
  } catch {
    detail = 'no JSON';
  }
  return `wechatpay HTTP ${answer.status} ${detail.replace(/\p{Cc}/gu, ' ').slice(0, 200)}`;
}

/**
 * WeChat Pay API v3 (SPEC 6), over node:crypto: native pay (the code_url is shown on the
 * service's own page), signed requests, answers and notifications verified with the platform
 * public key or, while a merchant switches, the platform certificate named by Wechatpay-Serial,
 * AEAD_AES_256_GCM resources; query, close, refund and refund query.
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

  constructor(
    private readonly config: ChannelConfig,
    private readonly payPageUrl: WechatPayPageUrl,
    /** The channel's notify URL: refund notifications come there too. */
    private readonly notifyUrl: string,
    private readonly dispatcher: Dispatcher | undefined,
    private readonly allowHttpGateway = false,
  ) {}

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

  /** The platform key WeChat Pay signed with: its public key by id, or one of its certificates by serial. */
  private platformKey(serial: string | null): KeyObject | null {
    if (!serial) return null;
    try {
      if (serial === this.config.platform_public_key_id && this.config.platform_public_key) return createPublicKey(this.config.platform_public_key);
      const certificate = this.config.platform_certificates?.[serial.toUpperCase()];
      return certificate ? new X509Certificate(certificate).publicKey : null;
    } catch {
      return null;
    }
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
      return createVerify('RSA-SHA256').update(`${timestamp}\n${nonce}\n${body}\n`, 'utf8').verify(key, signature, 'base64');
    } catch {
      return false;
    }
  }

  /** One signed API v3 call; a 2xx answer must carry a valid platform signature, or it is a ChannelError. */
  private async call(method: 'GET' | 'POST', path: string, body: Record<string, unknown> | null, signal: AbortSignal): Promise<ChannelAnswer> {
    const settings = this.settings();
    const text = body === null ? '' : JSON.stringify(body);
    const answer = await channelFetch(
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
    if (answer.status >= 500) throw new ChannelError(refusal(answer));
    if (answer.status >= 200 && answer.status < 300 && !this.verifiedSignature(answer.headers, answer.body, false)) {
      throw new ChannelError(`wechatpay ${method} ${path.split('?')[0]} answer signature does not verify`);
    }
    return answer;
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

  async createPayment(request: PaymentRequest, signal: AbortSignal): Promise<PaymentCreated> {
    const { mchid, appid } = this.settings();
    const answer = await this.call(
      'POST',
      '/v3/pay/transactions/native',
      {
        appid,
        mchid,
        description: request.subject,
        out_trade_no: request.orderNo,
        time_expire: rfc3339Beijing(request.expiresAt),
        notify_url: request.notifyUrl,
        amount: { total: request.amountFen, currency: 'CNY' },
      },
      signal,
    );
    if (answer.status !== 200) throw new ChannelError(`wechatpay native pay refused: ${refusal(answer)}`);
    const codeUrl = text(this.json<{ code_url?: unknown }>(answer, 'native pay').code_url);
    if (!codeUrl || !/^weixin:\/\//.test(codeUrl)) throw new ChannelError('wechatpay native pay answered without a code_url');
    return { payUrl: this.payPageUrl(request.orderNo, codeUrl), channelTradeNo: null };
  }

  verifyNotification(_params: Record<string, unknown>, context?: NotificationContext): ChannelNotification | null {
    const { apiv3_key: apiV3Key, mchid, appid } = this.config;
    if (!context?.rawBody || !apiV3Key || !mchid) return null;
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
    if (answer.status !== 200) throw new ChannelError(`wechatpay query: ${refusal(answer)}`);
    const transaction = this.json<Transaction>(answer, 'query');
    if (transaction.out_trade_no !== query.orderNo || transaction.mchid !== mchid || transaction.appid !== appid) {
      throw new ChannelError('wechatpay query answered about another trade');
    }
    const channelTradeNo = text(transaction.transaction_id);
    // CLOSED, NOTPAY, USERPAYING, PAYERROR, REVOKED: nothing to count; REFUND means it was paid and then refunded.
    if (transaction.trade_state !== 'SUCCESS' && transaction.trade_state !== 'REFUND') return { state: 'unpaid', amountFen: null, channelTradeNo };
    return { state: 'paid', amountFen: fen(transaction.amount?.total), channelTradeNo };
  }

  async closePayment(query: PaymentQuery, signal: AbortSignal): Promise<void> {
    const { mchid } = this.settings();
    const answer = await this.call('POST', `/v3/pay/transactions/out-trade-no/${query.orderNo}/close`, { mchid }, signal);
    if (answer.status !== 204 && answer.status !== 200) throw new ChannelError(`wechatpay close refused: ${refusal(answer)}`);
  }

  /**
   * `POST /v3/refund/domestic/refunds` with our refund_no as out_refund_no (WeChat refunds once
   * per out_refund_no). It needs the payment's total, which the query gives.
   */
  readonly refunds: RefundOperations = {
    refund: async (request, signal) => {
      const payment = await this.queryPayment({ orderNo: request.orderNo, amountFen: 0, channelTradeNo: request.channelTradeNo, paidAt: null }, signal);
      if (payment.state !== 'paid' || payment.amountFen === null)
        return { state: 'failed', channelRefundNo: null, failure: 'wechatpay: the payment is not paid at WeChat Pay' };
      const answer = await this.call(
        'POST',
        '/v3/refund/domestic/refunds',
        {
          out_trade_no: request.orderNo,
          out_refund_no: request.refundNo,
          notify_url: this.notifyUrl,
          amount: { refund: request.amountFen, total: payment.amountFen, currency: 'CNY' },
        },
        signal,
      );
      // 4xx is a refusal (balance, amount, state); the refund was not taken.
      if (answer.status >= 400) return { state: 'failed', channelRefundNo: null, failure: refusal(answer) };
      return this.refundStatus(this.json<RefundResource>(answer, 'refund'), request);
    },
    queryRefund: (request, signal) => this.queryRefund(request, signal),
  };

  private async queryRefund(request: RefundRequest, signal: AbortSignal): Promise<RefundStatus> {
    const answer = await this.call('GET', `/v3/refund/domestic/refunds/${request.refundNo}`, null, signal);
    if (answer.status === 404) return { state: 'not_found', channelRefundNo: null };
    if (answer.status !== 200) throw new ChannelError(`wechatpay refund query: ${refusal(answer)}`);
    return this.refundStatus(this.json<RefundResource>(answer, 'refund query'), request);
  }

  /**
   * SUCCESS is done, CLOSED failed; ABNORMAL (the money could not reach the payer's account)
   * stays processing: WeChat holds it until the merchant retries it in its platform, so giving
   * the merchant's balance back here could pay the refund twice.
   */
  private refundStatus(resource: RefundResource, request: RefundRequest): RefundStatus {
    if (resource.out_refund_no !== request.refundNo) throw new ChannelError('wechatpay answered about another refund');
    const channelRefundNo = text(resource.refund_id);
    switch (resource.status) {
      case 'SUCCESS':
        if (fen(resource.amount?.refund) !== request.amountFen) throw new ChannelError('wechatpay reports another refund amount');
        return { state: 'succeeded', channelRefundNo };
      case 'CLOSED':
        return { state: 'failed', channelRefundNo, failure: 'wechatpay: refund closed' };
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
   * unzipped bill, is what vouches for the bytes. The URL must be on the gateway: our signed
   * Authorization goes nowhere else.
   */
  readonly bills: BillOperations = {
    fetchBill: async (request, signal) => {
      const answer = await this.call('GET', `/v3/bill/tradebill?bill_date=${encodeURIComponent(request.date)}&bill_type=ALL&tar_type=GZIP`, null, signal);
      if (answer.status === 400 && errorCode(answer) === 'NO_STATEMENT_EXIST')
        return { format: 'wechatpay', raw: Buffer.alloc(0), noBill: 'wechatpay NO_STATEMENT_EXIST' };
      if (answer.status !== 200) throw new ChannelError(`wechatpay tradebill: ${refusal(answer)}`);
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
      if (url.origin !== settings.gateway.origin) throw new ChannelError('wechatpay tradebill answered a download_url off the gateway');
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
