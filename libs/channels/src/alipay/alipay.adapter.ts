import { createSign, createVerify } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { formatYuan, parseYuan } from '@app/common';
import {
  type BillOperations,
  type ChannelAdapter,
  type ChannelNotification,
  ChannelError,
  type NotificationAnswers,
  type PaymentCreated,
  type PaymentQuery,
  type PaymentRequest,
  type PaymentStatus,
  type RefundOperations,
  type RefundRequest,
  type RefundStatus,
} from './channel-adapter';
import { type ChannelConfig, assertGatewayProtocol } from './channel-config';
import { channelDownload, channelFetch } from './channel-http';

export const ALIPAY_GATEWAY = 'https://openapi.alipay.com/gateway.do';

/** Alipay's "content to sign": the parameters but sign (and sign_type for notifications), sorted by key, `k=v` joined by `&`. */
export function alipaySignContent(params: Record<string, unknown>, skip: readonly string[] = ['sign']): string {
  return Object.keys(params)
    .filter((k) => !skip.includes(k) && params[k] !== undefined && params[k] !== null && String(params[k]) !== '')
    .sort()
    .map((k) => `${k}=${String(params[k])}`)
    .join('&');
}

/** RSA2: SHA256withRSA, base64. */
export function rsa2Sign(content: string, privateKeyPem: string): string {
  return createSign('RSA-SHA256').update(content, 'utf8').sign(privateKeyPem, 'base64');
}

export function rsa2Verify(content: string, signature: unknown, publicKeyPem: string): boolean {
  if (typeof signature !== 'string' || !/^[A-Za-z0-9+/=]{1,1024}$/.test(signature)) return false;
  try {
    return createVerify('RSA-SHA256').update(content, 'utf8').verify(publicKeyPem, signature, 'base64');
  } catch {
    return false;
  }
}

/** Alipay's timestamps are Beijing time, `yyyy-MM-dd HH:mm:ss` (China has no daylight saving). */
export function beijingTime(at: Date): string {
  return new Date(at.getTime() + 8 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');
}

/**
 * The exact text of one top-level member's value in a JSON object: Alipay signs
 * `"<method>_response"`'s text as it sent it, so parsing and re-serialising would not verify.
 */
export function rawJsonMember(text: string, key: string): string | null {
  const start = text.indexOf(`"${key}"`);
  if (start < 0) return null;
  let i = start + key.length + 2;
  while (i < text.length && /[\s:]/.test(text[i])) i++;
  if (text[i] !== '{') return null;
  let depth = 0;
  let inString = false;
  for (let j = i; j < text.length; j++) {
    const c = text[j];
    if (inString) {
      if (c === '\\') j++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return text.slice(i, j + 1);
  }
  return null;
}

interface AlipayAnswer {
  code?: string;
  msg?: string;
  sub_code?: string;
  sub_msg?: string;
  [field: string]: unknown;
}

/** Alipay's words for a refusal, short and printable, for operators. */
function refusal(answer: AlipayAnswer): string {
  const text = [answer.code, answer.sub_code, answer.sub_msg ?? answer.msg].filter((p) => typeof p === 'string' && p).join(' ');
  return `alipay ${text.replace(/\p{Cc}/gu, ' ').slice(0, 200)}`;
}

const PAID_STATES = new Set(['TRADE_SUCCESS', 'TRADE_FINISHED']);

/**
 * Alipay open platform (SPEC 6), RSA2 over node:crypto: page pay (`pay_url` is the signed
 * gateway URL), form notifications verified with the Alipay public key, and the gateway's
 * JSON answers verified over their exact text for query, close, refund and refund query.
 */
export class AlipayAdapter implements ChannelAdapter {
  readonly acknowledgement = 'success';
  readonly paidIsFinal = true;
  /** Alipay reads only the body: `success` stops its retries, anything else (we say `fail`) asks for another. */
  readonly notificationAnswers: NotificationAnswers = {
    accepted: () => ({ status: 200, contentType: 'text/plain; charset=utf-8', body: 'success' }),
    refused: () => ({ status: 200, contentType: 'text/plain; charset=utf-8', body: 'fail' }),
  };

  constructor(
    private readonly config: ChannelConfig,
    private readonly dispatcher: Dispatcher | undefined,
    private readonly allowHttpGateway = false,
  ) {}

  private settings(): { appId: string; privateKey: string; alipayPublicKey: string; gateway: URL } {
    const { app_id: appId, private_key: privateKey, alipay_public_key: alipayPublicKey } = this.config;
    if (!appId || !privateKey || !alipayPublicKey) throw new ChannelError('alipay channel needs app_id, private_key and alipay_public_key');
    const gateway = new URL(this.config.gateway ?? ALIPAY_GATEWAY);
    try {
      assertGatewayProtocol(gateway, this.allowHttpGateway);
    } catch (err) {
      throw new ChannelError(`alipay ${(err as Error).message}`);
    }
    return { appId, privateKey, alipayPublicKey, gateway };
  }

  /** The common request parameters of one method, signed. */
  private signed(method: string, bizContent: Record<string, unknown>, extra: Record<string, string> = {}): Record<string, string> {
    const { appId, privateKey } = this.settings();
    const params: Record<string, string> = {
      app_id: appId,
      method,
      format: 'JSON',
      charset: 'utf-8',
      sign_type: 'RSA2',
      timestamp: beijingTime(new Date()),
      version: '1.0',
      biz_content: JSON.stringify(bizContent),
      ...extra,
    };
    return { ...params, sign: rsa2Sign(alipaySignContent(params), privateKey) };
  }

  async createPayment(request: PaymentRequest): Promise<PaymentCreated> {
    const { gateway } = this.settings();
    const params = this.signed(
      'alipay.trade.page.pay',
      {
        out_trade_no: request.orderNo,
        total_amount: formatYuan(request.amountFen),
        subject: request.subject,
        product_code: 'FAST_INSTANT_TRADE_PAY',
        time_expire: beijingTime(request.expiresAt),
      },
      { notify_url: request.notifyUrl, return_url: request.returnUrl },
    );
    const url = new URL(gateway);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    // Alipay numbers the trade when the payer pays; its trade_no comes with the notification.
    return { payUrl: url.toString(), channelTradeNo: null };
  }

  verifyNotification(params: Record<string, unknown>): ChannelNotification | null {
    const { app_id: appId, alipay_public_key: publicKey } = this.config;
    if (!appId || !publicKey) return null;
    if (params.sign_type !== undefined && params.sign_type !== 'RSA2') return null;
    if (!rsa2Verify(alipaySignContent(params, ['sign', 'sign_type']), params.sign, publicKey)) return null;
    // Signed by Alipay for another of its apps: not ours to act on.
    if (params.app_id !== appId) return null;
    if (typeof params.trade_status !== 'string' || !PAID_STATES.has(params.trade_status)) return null;
    const amountFen = parseYuan(params.total_amount);
    if (typeof params.out_trade_no !== 'string' || amountFen === null) return null;
    return {
      orderNo: params.out_trade_no,
      channelTradeNo: typeof params.trade_no === 'string' && params.trade_no ? params.trade_no : null,
      amountFen,
      outcome: 'paid',
    };
  }

  /** Calls one method and answers its verified `<method>_response` object; a missing or wrong signature is a ChannelError. */
  private async call(method: string, bizContent: Record<string, unknown>, signal: AbortSignal): Promise<AlipayAnswer> {
    const { gateway, alipayPublicKey } = this.settings();
    const url = new URL(gateway);
    url.searchParams.set('charset', 'utf-8');
    const answer = await channelFetch(
      url.toString(),
      {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded;charset=utf-8' },
        body: new URLSearchParams(this.signed(method, bizContent)).toString(),
      },
      this.dispatcher,
      signal,
    );
    if (answer.status !== 200) throw new ChannelError(`alipay ${method} answered HTTP ${answer.status}`);
    const key = `${method.replace(/\./g, '_')}_response`;
    const text = rawJsonMember(answer.body, key);
    let parsed: { sign?: unknown; [key: string]: unknown };
    try {
      parsed = JSON.parse(answer.body) as typeof parsed;
    } catch {
      throw new ChannelError(`alipay ${method} answered something other than JSON`);
    }
    if (text === null) throw new ChannelError(`alipay ${method} answered without ${key}`);
    if (!rsa2Verify(text, parsed.sign, alipayPublicKey)) throw new ChannelError(`alipay ${method} answer signature does not verify`);
    return JSON.parse(text) as AlipayAnswer;
  }

  async queryPayment(query: PaymentQuery, signal: AbortSignal): Promise<PaymentStatus> {
    const answer = await this.call('alipay.trade.query', { out_trade_no: query.orderNo }, signal);
    if (answer.code === '40004' && answer.sub_code === 'ACQ.TRADE_NOT_EXIST') return { state: 'unpaid', amountFen: null, channelTradeNo: null };
    if (answer.code !== '10000') throw new ChannelError(`alipay query: ${refusal(answer)}`);
    if (answer.out_trade_no !== query.orderNo) throw new ChannelError('alipay query answered about another trade');
    const tradeNo = typeof answer.trade_no === 'string' && answer.trade_no ? answer.trade_no : null;
    // TRADE_CLOSED is an unpaid trade closed (or refunded in full): never a payment to count now.
    if (typeof answer.trade_status !== 'string' || !PAID_STATES.has(answer.trade_status)) return { state: 'unpaid', amountFen: null, channelTradeNo: tradeNo };
    return { state: 'paid', amountFen: parseYuan(answer.total_amount), channelTradeNo: tradeNo };
  }

  /** `alipay.trade.close`; a trade the payer never opened does not exist at Alipay yet, which is as good as closed. */
  async closePayment(query: PaymentQuery, signal: AbortSignal): Promise<void> {
    const answer = await this.call('alipay.trade.close', { out_trade_no: query.orderNo }, signal);
    if (answer.code === '10000' || answer.sub_code === 'ACQ.TRADE_NOT_EXIST') return;
    throw new ChannelError(`alipay close refused: ${refusal(answer)}`);
  }

  /**
   * `alipay.trade.refund` with our refund_no as out_request_no (Alipay refunds once per
   * out_request_no); `fund_change: Y` is done, otherwise the refund query decides.
   */
  readonly refunds: RefundOperations = {
    refund: async (request, signal) => {
      const answer = await this.call(
        'alipay.trade.refund',
        { out_trade_no: request.orderNo, refund_amount: formatYuan(request.amountFen), out_request_no: request.refundNo },
        signal,
      );
      if (answer.code === '10000') return { state: answer.fund_change === 'Y' ? 'succeeded' : 'processing', channelRefundNo: request.refundNo };
      // 40004 is a business refusal (balance, state, amount); 20000 and the rest are outcomes we do not know.
      if (answer.code === '40004') return { state: 'failed', channelRefundNo: null, failure: refusal(answer) };
      throw new ChannelError(`alipay refund: ${refusal(answer)}`);
    },
    queryRefund: (request, signal) => this.queryRefund(request, signal),
  };

  /** Alipay: an answer carrying the refund with refund_status empty or REFUND_SUCCESS is a refund made; none found is "never got it". */
  private async queryRefund(request: RefundRequest, signal: AbortSignal): Promise<RefundStatus> {
    const answer = await this.call(
      'alipay.trade.fastpay.refund.query',
      { out_trade_no: request.orderNo, out_request_no: request.refundNo, query_options: ['gmt_refund_pay'] },
      signal,
    );
    if (answer.code !== '10000') {
      if (answer.sub_code === 'ACQ.TRADE_NOT_EXIST') return { state: 'not_found', channelRefundNo: null, failure: refusal(answer) };
      throw new ChannelError(`alipay refund query: ${refusal(answer)}`);
    }
    if (answer.out_request_no !== request.refundNo || answer.refund_amount === undefined) return { state: 'not_found', channelRefundNo: null };
    if (answer.refund_status === undefined || answer.refund_status === '' || answer.refund_status === 'REFUND_SUCCESS') {
      if (parseYuan(answer.refund_amount) !== request.amountFen) throw new ChannelError('alipay refund query reports another amount');
      return { state: 'succeeded', channelRefundNo: request.refundNo };
    }
    return { state: 'processing', channelRefundNo: request.refundNo };
  }

  /**
   * The trade bill: `alipay.data.dataservice.bill.downloadurl.query` answers (signed, verified) a
   * short-lived bill_download_url, on Alipay's file host rather than the gateway; its bytes are
   * the zip the alipay parser reads.
   */
  readonly bills: BillOperations = {
    fetchBill: async (request, signal) => {
      const answer = await this.call('alipay.data.dataservice.bill.downloadurl.query', { bill_type: 'trade', bill_date: request.date }, signal);
      if (answer.code !== '10000') {
        if (answer.sub_code === 'isp.bill_not_exist') return { format: 'alipay', raw: Buffer.alloc(0), noBill: 'alipay isp.bill_not_exist' };
        throw new ChannelError(`alipay bill: ${refusal(answer)}`);
      }
      let url: URL;
      try {
        url = new URL(String(answer.bill_download_url));
        assertGatewayProtocol(url, this.allowHttpGateway);
      } catch {
        throw new ChannelError('alipay bill answered without a usable bill_download_url');
      }
      const download = await channelDownload(url.toString(), {}, this.dispatcher, signal);
      if (download.status !== 200) throw new ChannelError(`alipay bill download answered HTTP ${download.status}`);
      return { format: 'alipay', raw: download.body };
    },
  };
}
