import { formatYuan, parseYuan, unixSeconds } from '@app/common';
import { sign, signText, verify, verifyText } from '@app/signature';
import type { SandboxBillRepository } from '@app/db';
import {
  type BillOperations,
  type ChannelAdapter,
  type ChannelNotification,
  ChannelError,
  type PaymentCreated,
  type PaymentQuery,
  type PaymentRequest,
  type PaymentStatus,
  type PayoutOperations,
  type PayoutRequest,
  type PayoutStatus,
  type Refusal,
  type RefundOperations,
  type RefundRequest,
  type RefundStatus,
} from './channel-adapter';
import { sandboxBillCsv } from './sandbox-bill';

/** The sandbox's own books of one channel: what its page took and the refunds it gave. */
export interface SandboxBook {
  channelId: number;
  lines: SandboxBillRepository;
}

/** SPEC 5: the sandbox refuses a refund or a payout whose amount ends in .44, so tests can make one fail. */
export function sandboxRefuses(amountFen: number): boolean {
  return amountFen % 100 === 44;
}

/** The sandbox's one refusal, documented by SPEC 5 itself. */
const SANDBOX_REFUSAL: Refusal = {
  code: 'AMOUNT_ENDS_IN_44',
  failure: 'sandbox refuses amounts ending in .44',
  document: 'SPEC 5 (the sandbox refuses a refund or a payout whose amount ends in .44)',
};

function sandboxRefund(request: RefundRequest): RefundStatus {
  return sandboxRefuses(request.amountFen)
    ? { state: 'failed', channelRefundNo: null, refusal: SANDBOX_REFUSAL }
    : { state: 'succeeded', channelRefundNo: `SBXR${request.refundNo}` };
}

function sandboxPayout(request: PayoutRequest): PayoutStatus {
  return sandboxRefuses(request.amountFen)
    ? { state: 'refused', channelPayoutNo: null, refusal: SANDBOX_REFUSAL }
    : { state: 'paid', channelPayoutNo: `SBXP${request.orderNo}` };
}

/** The checkout page's token: only whoever got the pay_url can pay or fail that order. */
export function sandboxCheckoutToken(secretKey: string, orderNo: string): string {
  return signText(checkoutMessage(orderNo), secretKey);
}

function checkoutMessage(orderNo: string): string {
  return `checkout:${orderNo}`;
}

export function verifySandboxCheckoutToken(secretKey: string, orderNo: string, token: unknown): boolean {
  return typeof token === 'string' && verifyText(checkoutMessage(orderNo), token, secretKey);
}

export interface SandboxNotification {
  out_trade_no: string;
  trade_no: string;
  amount: string;
  trade_status: 'SUCCESS' | 'FAILED';
  timestamp: number;
  sign: string;
}

/** What the sandbox "processor" posts to the notify route, signed like a merchant request (SPEC 3) with the channel's secret_key. */
export function signSandboxNotification(secretKey: string, orderNo: string, amountFen: number, outcome: 'paid' | 'failed'): SandboxNotification {
  const fields = {
    out_trade_no: orderNo,
    trade_no: `SBX${orderNo}`,
    amount: formatYuan(amountFen),
    trade_status: outcome === 'paid' ? ('SUCCESS' as const) : ('FAILED' as const),
    timestamp: unixSeconds(),
  };
  return { ...fields, sign: sign(fields, secretKey) };
}

/**
 * The built-in test channel (SPEC 6). Its pay_url is the service's own checkout page; the
 * page's buttons send the notification a real processor would. The sandbox keeps no books of
 * its own: a payment it signed is one it confirms, and a query about a refund or a payout
 * answers what asking would. It has nothing to close: an unpaid checkout page stays payable
 * (a late payment still counts). Payouts happen at once; the checkout page is not used.
 */
export class SandboxAdapter implements ChannelAdapter {
  readonly acknowledgement = 'success';
  readonly paidIsFinal = true;

  constructor(
    private readonly secretKey: string | undefined,
    private readonly publicBaseUrl: string,
    private readonly book: SandboxBook | null = null,
  ) {}

  private secret(): string {
    if (!this.secretKey) throw new ChannelError('sandbox channel has no secret_key');
    return this.secretKey;
  }

  async createPayment(request: PaymentRequest): Promise<PaymentCreated> {
    const token = sandboxCheckoutToken(this.secret(), request.orderNo);
    return {
      payUrl: `${this.publicBaseUrl}/sandbox/checkout/${request.orderNo}?token=${token}`,
      channelTradeNo: `SBX${request.orderNo}`,
    };
  }

  verifyNotification(params: Record<string, unknown>): ChannelNotification | null {
    if (!this.secretKey) return null;
    const { sign: signature, ...fields } = params;
    if (typeof signature !== 'string' || !verify(fields, signature, this.secretKey)) return null;
    const amountFen = parseYuan(fields.amount);
    const orderNo = fields.out_trade_no;
    const status = fields.trade_status;
    if (typeof orderNo !== 'string' || amountFen === null || (status !== 'SUCCESS' && status !== 'FAILED')) return null;
    return {
      orderNo,
      channelTradeNo: typeof fields.trade_no === 'string' && fields.trade_no ? fields.trade_no : null,
      amountFen,
      outcome: status === 'SUCCESS' ? 'paid' : 'failed',
    };
  }

  readonly refunds: RefundOperations = {
    refund: async (request) => this.booked(request, sandboxRefund(request)),
    queryRefund: async (request) => this.booked(request, sandboxRefund(request)),
  };

  /** A refund the sandbox gave goes into its books (once per refund_no). */
  private async booked(request: RefundRequest, status: RefundStatus): Promise<RefundStatus> {
    if (this.book && status.state === 'succeeded') {
      await this.book.lines.record(this.book.channelId, {
        kind: 'refund',
        tradeNo: status.channelRefundNo ?? `SBXR${request.refundNo}`,
        orderNo: request.orderNo,
        refundNo: request.refundNo,
        amountFen: request.amountFen,
      });
    }
    return status;
  }

  /** Its daily bill: every line of its books of that day (SPEC 6 Reconciliation). */
  get bills(): BillOperations | undefined {
    const book = this.book;
    if (!book) return undefined;
    return {
      fetchBill: async (request) => ({
        format: 'sandbox',
        raw: sandboxBillCsv(book.channelId, request.date, await book.lines.between(book.channelId, request.from, request.to)),
      }),
    };
  }

  readonly payouts: PayoutOperations = {
    payout: async (request) => sandboxPayout(request),
    queryPayout: async (request) => sandboxPayout(request),
  };

  /** Paid when we recorded it paid, or when its books say the page took the money (a notification we lost). */
  async queryPayment(query: PaymentQuery): Promise<PaymentStatus> {
    if (query.paidAt) return { state: 'paid', amountFen: query.amountFen, channelTradeNo: query.channelTradeNo ?? `SBX${query.orderNo}` };
    const taken = this.book ? await this.book.lines.paid(this.book.channelId, query.orderNo) : null;
    return taken ? { state: 'paid', amountFen: taken.amountFen, channelTradeNo: taken.tradeNo } : { state: 'unpaid', amountFen: null, channelTradeNo: null };
  }
}
