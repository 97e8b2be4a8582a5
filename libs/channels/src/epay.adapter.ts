import { createHash } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { formatYuan, parseYuan } from '@app/common';
import { sameText } from '@app/signature';
import {
  type BillOperations,
  type ChannelAdapter,
  type ChannelNotification,
  ChannelError,
  type CloseOutcome,
  type PaymentCreated,
  type PaymentQuery,
  type PaymentRequest,
  type PaymentStatus,
  type RefundOperations,
  type RefundRequest,
  type Refusal,
  type RefundStatus,
} from './channel-adapter';
import { type ChannelConfig, assertGatewayProtocol } from './channel-config';
import { channelGet, channelPostForm } from './channel-http';

/**
 * epay's signature: md5 of the non-empty parameters except sign and sign_type, sorted by key,
 * joined as k=v&..., with the key appended directly; lower-case hex.
 */
export function epaySign(params: Record<string, unknown>, key: string): string {
  const text = Object.keys(params)
    .filter((k) => k !== 'sign' && k !== 'sign_type' && params[k] !== undefined && params[k] !== null && String(params[k]) !== '')
    .sort()
    .map((k) => `${k}=${String(params[k])}`)
    .join('&');
  return createHash('md5')
    .update(text + key, 'utf8')
    .digest('hex');
}

interface EpayQueryAnswer {
  code?: unknown;
  msg?: unknown;
  status?: unknown;
  money?: unknown;
  trade_no?: unknown;
  out_trade_no?: unknown;
  refund_no?: unknown;
}

/** The gateway's answer as JSON, or a ChannelError: anything else is an outcome we do not know. */
function parseAnswer(what: string, { status, body }: { status: number; body: string }): EpayQueryAnswer {
  if (status !== 200) throw new ChannelError(`epay ${what} answered HTTP ${status}`);
  let answer: unknown;
  try {
    answer = JSON.parse(body);
  } catch {
    throw new ChannelError(`epay ${what} answered something other than JSON`);
  }
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) throw new ChannelError(`epay ${what} answered something other than an object`);
  return answer as EpayQueryAnswer;
}

/** A gateway's own words for a refusal, kept short and printable for the operator. */
function gatewayMessage(answer: EpayQueryAnswer): string {
  const msg = typeof answer.msg === 'string' ? answer.msg.replace(/\p{Cc}/gu, ' ').slice(0, 200) : '';
  return `epay code ${String(answer.code)}${msg ? `: ${msg}` : ''}`;
}

/** `code` as the gateways write it: a number or a numeric string. */
function codeOf(answer: EpayQueryAnswer): number | null {
  const code = Number(answer.code);
  return answer.code !== undefined && answer.code !== null && answer.code !== '' && Number.isInteger(code) ? code : null;
}

/**
 * What epay's answers mean for money (SPEC 6), in one place. The protocol's api.php documents
 * `code` 1 (or 0, gateways differ) as done and a negative code as an error it raised without
 * doing anything (`-1 商户余额不足`, `-2 订单不存在`): the only refusal. Any other code, an answer
 * that is not JSON, a 5xx or a timeout is unknown. refundquery's `status` 2 is the gateway saying
 * the refund failed.
 */
const EPAY_DOCUMENT = 'the epay protocol, api.php (code < 0: refused before anything moved; refundquery status 2: failed)';

function epayRefusal(answer: EpayQueryAnswer): Refusal | null {
  const code = codeOf(answer);
  return code !== null && code < 0 ? { code: String(code), failure: gatewayMessage(answer), document: EPAY_DOCUMENT } : null;
}

/**
 * The widespread third-party "epay" protocol: the payer goes to the md5-signed
 * `submit.php` URL, the gateway notifies with `trade_status=TRADE_SUCCESS` and expects the
 * body `success`, and `api.php?act=order` answers an order's state.
 */
export class EpayAdapter implements ChannelAdapter {
  readonly acknowledgement = 'success';
  // Anyone holding the shared md5 key can sign a notification: the worker asks the gateway first.
  readonly paidIsFinal = false;

  constructor(
    private readonly config: ChannelConfig,
    private readonly dispatcher: Dispatcher | undefined,
    /** CHANNEL_ALLOW_HTTP: a channel stored with an http gateway_url is still refused at run time without it. */
    private readonly allowHttpGateway = false,
    /** Where the gateway sends the payer when the order has no return_url of its own (the protocol requires one). */
    private readonly defaultReturnUrl = '',
  ) {}

  private settings(): { pid: string; key: string; gateway: URL } {
    const { merchant_no: pid, secret_key: key, gateway_url: gatewayUrl } = this.config;
    if (!pid || !key || !gatewayUrl) throw new ChannelError('epay channel needs merchant_no, secret_key and gateway_url');
    // "https://pay.example.com" and "https://pay.example.com/" both mean the gateway's root.
    const gateway = new URL(gatewayUrl.endsWith('/') ? gatewayUrl : `${gatewayUrl}/`);
    try {
      assertGatewayProtocol(gateway, this.allowHttpGateway);
    } catch (err) {
      throw new ChannelError(`epay ${(err as Error).message}`);
    }
    return { pid, key, gateway };
  }

  async createPayment(request: PaymentRequest): Promise<PaymentCreated> {
    const { pid, key, gateway } = this.settings();
    const params: Record<string, string> = {
      pid,
      type: request.payMethod,
      out_trade_no: request.orderNo,
      notify_url: request.notifyUrl,
      return_url: request.returnUrl ?? this.defaultReturnUrl,
      name: request.subject,
      money: formatYuan(request.amountFen),
    };
    const url = new URL('submit.php', gateway);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    url.searchParams.set('sign', epaySign(params, key));
    url.searchParams.set('sign_type', 'MD5');
    // The gateway numbers the trade when the payer arrives; its trade_no comes with the notification.
    return { payUrl: url.toString(), channelTradeNo: null };
  }

  verifyNotification(params: Record<string, unknown>): ChannelNotification | null {
    const { merchant_no: pid, secret_key: key } = this.config;
    if (!pid || !key) return null;
    const sign = params.sign;
    if (typeof sign !== 'string' || !/^[0-9a-f]{32}$/i.test(sign)) return null;
    if (!sameText(sign.toLowerCase(), epaySign(params, key))) return null;
    if (String(params.pid) !== pid || params.trade_status !== 'TRADE_SUCCESS') return null;
    const amountFen = parseYuan(params.money);
    if (typeof params.out_trade_no !== 'string' || amountFen === null) return null;
    return {
      orderNo: params.out_trade_no,
      channelTradeNo: typeof params.trade_no === 'string' && params.trade_no ? params.trade_no : null,
      amountFen,
      outcome: 'paid',
    };
  }

  async queryPayment(query: PaymentQuery, signal: AbortSignal): Promise<PaymentStatus> {
    const { pid, key, gateway } = this.settings();
    const url = new URL('api.php', gateway);
    url.search = new URLSearchParams({ act: 'order', pid, key, out_trade_no: query.orderNo }).toString();
    const answer = parseAnswer('query', await channelGet(url.toString(), this.dispatcher, signal));
    if (String(answer.code) !== '1') return { state: 'unpaid', amountFen: null, channelTradeNo: null };
    return {
      state: String(answer.status) === '1' ? 'paid' : 'unpaid',
      amountFen: parseYuan(answer.money),
      channelTradeNo: typeof answer.trade_no === 'string' && answer.trade_no ? answer.trade_no : null,
    };
  }

  /**
   * `api.php?act=close`: the gateway stops offering the payment. Gateways without it refuse
   * (a negative code): the payment query then decides, and a payment made anyway still counts.
   */
  async closePayment(query: PaymentQuery, signal: AbortSignal): Promise<CloseOutcome> {
    const { pid, key, gateway } = this.settings();
    const answer = parseAnswer(
      'close',
      await channelPostForm(new URL('api.php?act=close', gateway).toString(), { pid, key, out_trade_no: query.orderNo }, this.dispatcher, signal),
    );
    const code = codeOf(answer);
    if (code === 0 || code === 1) return { state: 'closed' };
    const refusal = epayRefusal(answer);
    if (refusal) return { state: 'refused', refusal };
    throw new ChannelError(`epay close answered an unknown code: ${gatewayMessage(answer)}`);
  }

  /**
   * `api.php?act=refund` (POST, our refund_no as out_refund_no so gateways that take it refund
   * once) then `api.php?act=refundquery`. A taken refund (code 0 or 1: gateways differ) is
   * confirmed by the query; a negative code is a refusal; anything else is an unknown outcome.
   */
  /**
   * epay has no bill (SPEC 6 Reconciliation): each of the day's orders is queried
   * (`api.php?act=order`) and each of its refunds (`act=refundquery`), one after the other so a
   * small gateway is not flooded; the answers make the day's bill: JSON in a fixed order, so the
   * same answers are the same bytes (and the same run).
   */
  readonly bills: BillOperations = {
    fetchBill: async (request, signal) => {
      const answers: {
        kind: 'pay' | 'refund';
        order_no: string;
        refund_no: string | null;
        state: string;
        amount_fen: number | null;
        trade_no: string | null;
      }[] = [];
      for (const order of await request.orders()) {
        const status = await this.queryPayment(order, signal);
        answers.push({
          kind: 'pay',
          order_no: order.orderNo,
          refund_no: null,
          state: status.state,
          amount_fen: status.amountFen,
          trade_no: status.channelTradeNo,
        });
      }
      for (const refund of await request.refunds()) {
        const status = await this.refunds.queryRefund(refund, signal);
        // refundquery names no amount: a refund it settled is the amount we asked for.
        answers.push({
          kind: 'refund',
          order_no: refund.orderNo,
          refund_no: refund.refundNo,
          state: status.state,
          amount_fen: refund.amountFen,
          trade_no: status.channelRefundNo,
        });
      }
      return { format: 'epay', raw: Buffer.from(`${JSON.stringify({ format: 'epay-order-queries', date: request.date, answers })}\n`, 'utf8') };
    },
  };

  readonly refunds: RefundOperations = {
    refund: async (request, signal) => {
      const { pid, key, gateway } = this.settings();
      const form: Record<string, string> = { pid, key, out_trade_no: request.orderNo, money: formatYuan(request.amountFen), out_refund_no: request.refundNo };
      if (request.channelTradeNo) form.trade_no = request.channelTradeNo;
      const answer = parseAnswer('refund', await channelPostForm(new URL('api.php?act=refund', gateway).toString(), form, this.dispatcher, signal));
      const code = codeOf(answer);
      if (code === 0 || code === 1)
        return { state: 'processing', channelRefundNo: typeof answer.refund_no === 'string' && answer.refund_no ? answer.refund_no : null };
      const refusal = epayRefusal(answer);
      if (refusal) return { state: 'failed', channelRefundNo: null, refusal };
      throw new ChannelError(`epay refund answered an unknown code: ${gatewayMessage(answer)}`);
    },
    queryRefund: (request, signal) => this.queryRefund(request, signal),
  };

  private async queryRefund(request: RefundRequest, signal: AbortSignal): Promise<RefundStatus> {
    const { pid, key, gateway } = this.settings();
    const url = new URL('api.php', gateway);
    url.search = new URLSearchParams({ act: 'refundquery', pid, key, out_refund_no: request.refundNo }).toString();
    const answer = parseAnswer('refund query', await channelGet(url.toString(), this.dispatcher, signal));
    const code = codeOf(answer);
    // A refusal to answer (no such refund, a gateway without the act) is "never got it": the caller asks again only if the gateway never took it.
    if (code !== null && code < 0) return { state: 'not_found', channelRefundNo: null };
    if (code !== 0 && code !== 1) throw new ChannelError(`epay refund query answered an unknown code: ${gatewayMessage(answer)}`);
    const channelRefundNo = typeof answer.refund_no === 'string' && answer.refund_no ? answer.refund_no : null;
    switch (String(answer.status)) {
      case '1':
        return { state: 'succeeded', channelRefundNo };
      case '2':
        return { state: 'failed', channelRefundNo, refusal: { code: 'status 2', failure: gatewayMessage(answer), document: EPAY_DOCUMENT } };
      case '0':
        return { state: 'processing', channelRefundNo };
      default:
        throw new ChannelError(`epay refund query answered an unknown status ${JSON.stringify(answer.status)?.slice(0, 20)}`);
    }
  }
}
