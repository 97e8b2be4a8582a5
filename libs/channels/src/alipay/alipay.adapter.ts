import type { Dispatcher } from 'undici';
import { formatYuan, parseYuan } from '@app/common';
import {
  type BillOperations,
  type CashierOperations,
  type CashierUrl,
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
import { type AlipayMode, channelPayModes } from '../pay-modes';
import { alipayCertPublicKey, alipayCertSn, alipayRootCertSn } from './alipay-certificates';
import { ALIPAY_BILL_HOSTS, ALIPAY_BILL_LINK_LIFETIME_MS, CLOSE_REFUSALS, REFUND_REFUSALS, TRADE_NOT_EXIST, classify } from './alipay-answers';
import {
  ALIPAY_GATEWAY,
  type AlipayAnswer,
  type AlipayVerifier,
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
 * The two website pays and their product codes: computer website pay
 * (https://opendocs.alipay.com/open/270/105898, alipay.trade.page.pay) and phone website pay
 * (https://opendocs.alipay.com/open/203/105288, alipay.trade.wap.pay).
 */
const WEBSITE_PAYS: Record<AlipayMode, { method: string; productCode: string }> = {
  page: { method: 'alipay.trade.page.pay', productCode: 'FAST_INSTANT_TRADE_PAY' },
  wap: { method: 'alipay.trade.wap.pay', productCode: 'QUICK_WAP_WAY' },
};

/** The signing material of one key mode (SPEC 6 Key modes). */
interface AlipayKeys {
  appId: string;
  privateKey: string;
  verifier: AlipayVerifier;
  /** Certificate mode: app_cert_sn and alipay_root_cert_sn, carried by every request. */
  certParams: Record<string, string>;
}

/**
 * Alipay open platform (SPEC 6), RSA2 over node:crypto, in public-key or public-key-certificate
 * mode: `pay_url` is the service's cashier, which sends a desktop payer to page pay and a phone
 * (or the Alipay app) to wap pay, both as the signed gateway URL; form notifications verified
 * with Alipay's public key (or its certificate's); the gateway's JSON answers verified over their
 * exact text for query, close, refund, refund query and the bill. This file is the flow: which
 * calls, in what order, what an answer means for money; the wire is alipay-wire.ts, the
 * refusal codes alipay-answers.ts, the certificate SNs alipay-certificates.ts.
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
    private readonly cashierUrl: CashierUrl,
    private readonly dispatcher: Dispatcher | undefined,
    private readonly allowHttpGateway = false,
  ) {
    this.cashier = this.cashierOperations();
  }

  readonly cashier: CashierOperations;

  /** The keys of the config's key mode: Alipay's public key as given, or read from its certificate with the SNs requests carry. */
  private keys(): AlipayKeys {
    const { app_id: appId, private_key: privateKey, alipay_public_key: publicKey, app_cert: appCert, alipay_cert: alipayCert } = this.config;
    const rootCert = this.config.alipay_root_cert;
    if (!appId || !privateKey || !(publicKey || (appCert && alipayCert && rootCert)))
      throw new ChannelError('alipay channel needs app_id, private_key and alipay_public_key, or app_cert, alipay_cert and alipay_root_cert');
    if (publicKey) return { appId, privateKey, verifier: { publicKey, certSn: null }, certParams: {} };
    try {
      return {
        appId,
        privateKey,
        verifier: { publicKey: alipayCertPublicKey(alipayCert!), certSn: alipayCertSn(alipayCert!) },
        certParams: { app_cert_sn: alipayCertSn(appCert!), alipay_root_cert_sn: alipayRootCertSn(rootCert!) },
      };
    } catch (err) {
      throw new ChannelError(`alipay certificates cannot be read: ${(err as Error).message}`);
    }
  }

  private settings(): AlipayKeys & { gateway: URL } {
    const keys = this.keys();
    const gateway = new URL(this.config.gateway ?? ALIPAY_GATEWAY);
    try {
      assertGatewayProtocol(gateway, this.allowHttpGateway);
    } catch (err) {
      throw new ChannelError(`alipay ${(err as Error).message}`);
    }
    return { ...keys, gateway };
  }

  /** The common request parameters of one method, signed (the certificate SNs included, in certificate mode). */
  private signed(method: string, bizContent: Record<string, unknown>, extra: Record<string, string> = {}): Record<string, string> {
    const { appId, privateKey, certParams } = this.settings();
    const params: Record<string, string> = {
      app_id: appId,
      method,
      format: 'JSON',
      charset: 'utf-8',
      sign_type: 'RSA2',
      timestamp: beijingTime(new Date()),
      version: '1.0',
      biz_content: JSON.stringify(bizContent),
      ...certParams,
      ...extra,
    };
    return { ...params, sign: rsa2Sign(alipaySignContent(params), privateKey) };
  }

  /**
   * pay_url is the cashier's (SPEC 6): the trade opens when the payer reaches Alipay through it.
   * The keys are read now, so a channel that cannot sign fails the order at creation (50200).
   */
  async createPayment(request: PaymentRequest): Promise<PaymentCreated> {
    this.settings();
    return { payUrl: this.cashierUrl(request.orderNo), channelTradeNo: null };
  }

  /**
   * Page pay on a computer, wap pay on a phone or in the Alipay app: the payer follows the gateway
   * URL signed as the page is shown. Both are one trade at Alipay, named by out_trade_no
   * (https://opendocs.alipay.com/open/203/105288: the trade is created when the payer pays, and a
   * second request for the same out_trade_no is the same trade only while amount, subject and
   * time_expire are the ones of the first, else TRADE_DATA_MATCH_ERROR 交易信息被篡改): the
   * business fields are the order's own, so a payer who switches devices pays the one trade.
   */
  private cashierOperations(): CashierOperations {
    return {
      modes: channelPayModes('alipay', this.config),
      step: (mode, request, _prepay, back) => {
        const pay = WEBSITE_PAYS[mode as AlipayMode];
        if (!pay) throw new ChannelError(`alipay has no ${mode} pay`);
        const { gateway } = this.settings();
        const params = this.signed(
          pay.method,
          {
            out_trade_no: request.orderNo,
            total_amount: formatYuan(request.amountFen),
            subject: request.subject,
            product_code: pay.productCode,
            time_expire: beijingTime(request.expiresAt),
            ...(mode === 'wap' ? { quit_url: back.quitUrl } : {}),
          },
          { notify_url: request.notifyUrl, return_url: back.returnUrl },
        );
        const url = new URL(gateway);
        for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
        // Alipay numbers the trade when the payer pays; its trade_no comes with the notification.
        return { kind: 'link', url: url.toString(), sendsReferrer: false };
      },
    };
  }

  /** Every trade_status_sync notification Alipay signed for this app: what it says (alipay-wire's notificationOf). */
  verifyNotification(params: Record<string, unknown>): ChannelNotification | null {
    let keys: AlipayKeys;
    try {
      keys = this.keys();
    } catch {
      return null;
    }
    const { appId, verifier } = keys;
    if (params.sign_type !== undefined && params.sign_type !== 'RSA2') return null;
    if (!rsa2Verify(alipaySignContent(params, ['sign', 'sign_type']), params.sign, verifier.publicKey)) return null;
    // Signed by Alipay for another of its apps: not ours to act on.
    if (params.app_id !== appId) return null;
    return notificationOf(params);
  }

  /** Calls one method and answers its verified `<method>_response` object; anything else is a ChannelError (verifiedAnswer). */
  private async call(method: string, bizContent: Record<string, unknown>, signal: AbortSignal): Promise<AlipayAnswer> {
    const { gateway, verifier } = this.settings();
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
    return verifiedAnswer(method, answer, verifier);
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
