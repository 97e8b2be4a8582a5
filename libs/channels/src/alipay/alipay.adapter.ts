import type { Dispatcher } from 'undici';
import { formatYuan, parseYuan } from '@app/common';
import {
  type BillOperations,
  type ChannelAdapter,
  type ChannelNotification,
  ChannelError,
  type CloseOutcome,
  type NotificationAnswers,
  type PaymentCreated,
  type PaymentQuery,
  type PaymentRequest,
  type PaymentStatus,
  type RefundOperations,
  type RefundRequest,
  type RefundStatus,
} from '../channel-adapter';
import { type ChannelConfig, assertGatewayProtocol } from '../channel-config';
import { channelDownload, channelFetch } from '../channel-http';
import { ALIPAY_BILL_HOSTS, ALIPAY_BILL_LINK_LIFETIME_MS, CLOSE_REFUSALS, REFUND_REFUSALS, TRADE_NOT_EXIST, classify } from './alipay-answers';
import {
  ALIPAY_GATEWAY,
  type AlipayAnswer,
  alipaySignContent,
  alipayWords,
  beijingTime,
  notificationOf,
  rsa2Sign,
  rsa2Verify,
  text,
  verifiedAnswer,
} from './alipay-wire';

const PAID_STATES = new Set(['TRADE_SUCCESS', 'TRADE_FINISHED']);

/**
 * Alipay open platform (SPEC 6), RSA2 over node:crypto: page pay (`pay_url` is the signed
 * gateway URL), form notifications verified with the Alipay public key, and the gateway's
 * JSON answers verified over their exact text for query, close, refund, refund query and the
 * bill. This file is the flow: which calls, in what order, what an answer means for money; the
 * wire is alipay-wire.ts, the refusal codes alipay-answers.ts.
 */
export class AlipayAdapter implements ChannelAdapter {
  readonly acknowledgement = 'success';
  readonly paidIsFinal = true;
  /** Alipay reads only the body: `success` stops its retries (for about 25 hours), anything else (we say `fail`) asks for another. */
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
      { notify_url: request.notifyUrl, return_url: request.returnUrl ?? '' },
    );
    const url = new URL(gateway);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    // Alipay numbers the trade when the payer pays; its trade_no comes with the notification.
    return { payUrl: url.toString(), channelTradeNo: null };
  }

  /** Every trade_status_sync notification Alipay signed for this app: what it says (alipay-wire's notificationOf). */
  verifyNotification(params: Record<string, unknown>): ChannelNotification | null {
    const { app_id: appId, alipay_public_key: publicKey } = this.config;
    if (!appId || !publicKey) return null;
    if (params.sign_type !== undefined && params.sign_type !== 'RSA2') return null;
    if (!rsa2Verify(alipaySignContent(params, ['sign', 'sign_type']), params.sign, publicKey)) return null;
    // Signed by Alipay for another of its apps: not ours to act on.
    if (params.app_id !== appId) return null;
    return notificationOf(params);
  }

  /** Calls one method and answers its verified `<method>_response` object; anything else is a ChannelError (verifiedAnswer). */
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
    return verifiedAnswer(method, answer, alipayPublicKey);
  }

  async queryPayment(query: PaymentQuery, signal: AbortSignal): Promise<PaymentStatus> {
    const answer = await this.call('alipay.trade.query', { out_trade_no: query.orderNo }, signal);
    if (answer.code === '40004' && answer.sub_code === TRADE_NOT_EXIST) return { state: 'unpaid', amountFen: null, channelTradeNo: null };
    if (answer.code !== '10000') throw new ChannelError(`alipay query: ${alipayWords(answer)}`);
    if (answer.out_trade_no !== query.orderNo) throw new ChannelError('alipay query answered about another trade');
    const tradeNo = text(answer.trade_no);
    // TRADE_CLOSED is an unpaid trade closed (or refunded in full): never a payment to count now.
    if (typeof answer.trade_status !== 'string' || !PAID_STATES.has(answer.trade_status)) return { state: 'unpaid', amountFen: null, channelTradeNo: tradeNo };
    return { state: 'paid', amountFen: parseYuan(answer.total_amount), channelTradeNo: tradeNo };
  }

  /** `alipay.trade.close`; a trade the payer never opened does not exist at Alipay yet, which is as good as closed. */
  async closePayment(query: PaymentQuery, signal: AbortSignal): Promise<CloseOutcome> {
    const answer = await this.call('alipay.trade.close', { out_trade_no: query.orderNo }, signal);
    if (answer.code === '40004' && answer.sub_code === TRADE_NOT_EXIST) return { state: 'closed' };
    const read = classify(answer, CLOSE_REFUSALS);
    if (read.class === 'done') return { state: 'closed' };
    if (read.class === 'refused') return { state: 'refused', refusal: read.refusal };
    throw new ChannelError(`alipay close: ${read.words}`);
  }

  /**
   * `alipay.trade.refund` with our refund_no as out_request_no (Alipay refunds once per
   * out_request_no): `fund_change: Y` is done; `N` (a repeat of a refund made, or one not settled)
   * leaves the refund query to decide; a documented refusal fails it; anything else is unknown.
   */
  readonly refunds: RefundOperations = {
    refund: async (request, signal) => {
      const answer = await this.call(
        'alipay.trade.refund',
        { out_trade_no: request.orderNo, refund_amount: formatYuan(request.amountFen), out_request_no: request.refundNo },
        signal,
      );
      const read = classify(answer, REFUND_REFUSALS);
      if (read.class === 'refused') return { state: 'failed', channelRefundNo: null, refusal: read.refusal };
      if (read.class === 'unknown') throw new ChannelError(`alipay refund: ${read.words}`);
      if (answer.out_trade_no !== undefined && answer.out_trade_no !== request.orderNo) throw new ChannelError('alipay refund answered about another trade');
      return { state: answer.fund_change === 'Y' ? 'succeeded' : 'processing', channelRefundNo: request.refundNo };
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
      if (answer.code === '40004' && answer.sub_code === TRADE_NOT_EXIST) return { state: 'not_found', channelRefundNo: null };
      throw new ChannelError(`alipay refund query: ${alipayWords(answer)}`);
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
   * bill_download_url that works for 30 s, on Alipay's bill host rather than the gateway (plain
   * http there): fetched at once, from a pinned host only. Its bytes are the zip the alipay
   * parser reads.
   */
  readonly bills: BillOperations = {
    fetchBill: async (request, signal) => {
      const answer = await this.call('alipay.data.dataservice.bill.downloadurl.query', { bill_type: 'trade', bill_date: request.date }, signal);
      const linkExpiresAt = Date.now() + ALIPAY_BILL_LINK_LIFETIME_MS;
      if (answer.code !== '10000') {
        if (answer.sub_code === 'isp.bill_not_exist') return { format: 'alipay', raw: Buffer.alloc(0), noBill: 'alipay isp.bill_not_exist' };
        throw new ChannelError(`alipay bill: ${alipayWords(answer)}`);
      }
      const url = this.billLink(answer.bill_download_url);
      const download = await channelDownload(url.toString(), {}, this.dispatcher, signal, linkExpiresAt);
      if (download.status !== 200) throw new ChannelError(`alipay bill download answered HTTP ${download.status}`);
      return { format: 'alipay', raw: download.body };
    },
  };

  /**
   * A bill link we fetch: on one of Alipay's bill hosts (http or https, as Alipay serves them), or
   * on the configured gateway's own host (Alipay's sandbox, a test gateway) under the gateway's
   * protocol rule. Anything else is refused before any request leaves.
   */
  private billLink(value: unknown): URL {
    let url: URL;
    try {
      url = new URL(String(value));
    } catch {
      throw new ChannelError('alipay bill answered without a usable bill_download_url');
    }
    const { gateway } = this.settings();
    const onBillHost = ALIPAY_BILL_HOSTS.includes(url.hostname) && (url.protocol === 'http:' || url.protocol === 'https:') && url.port === '';
    const onGateway = url.host === gateway.host && (url.protocol === gateway.protocol || url.protocol === 'https:');
    if (!onBillHost && !onGateway)
      throw new ChannelError(`alipay bill_download_url is not on an alipay bill host (${url.protocol}//${url.hostname.slice(0, 100)})`);
    return url;
  }
}
