/** What the service asks a channel to do for one order. */
export interface PaymentRequest {
  orderNo: string;
  amountFen: number;
  payMethod: string;
  /** Shown to the payer by the channel. */
  subject: string;
  /** Where the channel posts its notification: {PUBLIC_BASE_URL}{API_PREFIX}/channel/notify/{channelId}. */
  notifyUrl: string;
  /** Where the channel sends the payer back. */
  returnUrl: string;
  /** The order's expiry: channels that take one stop accepting the payment then. */
  expiresAt: Date;
}

export interface PaymentCreated {
  payUrl: string;
  /** The channel's own number for the payment, when it gives one at creation. */
  channelTradeNo: string | null;
}

/** A notification that verified: what the channel says happened to an order. */
export interface ChannelNotification {
  orderNo: string;
  channelTradeNo: string | null;
  amountFen: number;
  outcome: 'paid' | 'failed';
  /** Set when the notification is about a refund of the order (wechatpay's REFUND.*), not its payment. */
  refund?: { refundNo: string; outcome: 'succeeded' | 'failed'; channelRefundNo: string | null };
}

/** What else arrived with a notification: protocols that sign headers and the exact body (wechatpay) read these. */
export interface NotificationContext {
  headers: Record<string, string | string[] | undefined>;
  /** The body exactly as received; null when it was not JSON. */
  rawBody: string | null;
}

/** The HTTP answer a channel expects to a notification. */
export interface NotificationAnswer {
  status: number;
  contentType: string | null;
  body: string;
}

/** How a protocol answers its notifications, when it is not "the acknowledgement text, or our JSON envelope". */
export interface NotificationAnswers {
  accepted(): NotificationAnswer;
  /** `status`: the HTTP status our envelope would have used; `message` is safe to show (no secret). */
  refused(status: number, message: string): NotificationAnswer;
}

/** The channel's answer to "was this order paid?". */
export interface PaymentStatus {
  state: 'paid' | 'unpaid' | 'failed';
  amountFen: number | null;
  channelTradeNo: string | null;
}

/** What the worker knows when it re-queries a channel. */
export interface PaymentQuery {
  orderNo: string;
  amountFen: number;
  channelTradeNo: string | null;
  paidAt: Date | null;
}

/** A refund of a paid order, as the service asks the channel for it. */
export interface RefundRequest {
  /** The service's refund_no: the channel's idempotency key where it takes one. */
  refundNo: string;
  orderNo: string;
  channelTradeNo: string | null;
  amountFen: number;
}

/**
 * What the channel says of a refund. `processing`: it took the refund and will finish it later;
 * `not_found` (queries only): it never got the request, so asking again cannot refund twice.
 */
export interface RefundStatus {
  state: 'succeeded' | 'failed' | 'processing' | 'not_found';
  channelRefundNo: string | null;
  /** Why it refused, when it says (shown to operators, never a secret). */
  failure?: string | null;
}

/** Money sent to a sell order's payee. `payeeAccount` is the card number in clear: never log it. */
export interface PayoutRequest {
  orderNo: string;
  amountFen: number;
  payeeName: string;
  payeeAccount: string;
  payeeBank: string;
}

/** What the channel says of a payout; `not_found` (queries only): it never got the request. */
export interface PayoutStatus {
  state: 'paid' | 'refused' | 'processing' | 'not_found';
  channelPayoutNo: string | null;
  failure?: string | null;
}

/**
 * Refunds of paid orders. An answer that never came (a timeout, a 5xx) is a ChannelError: the
 * caller then queries before it asks again, so a refund is never made twice.
 */
export interface RefundOperations {
  refund(request: RefundRequest, signal: AbortSignal): Promise<RefundStatus>;
  queryRefund(request: RefundRequest, signal: AbortSignal): Promise<RefundStatus>;
}

/** Payouts (sell orders), with the same rule as refunds for an unknown outcome. */
export interface PayoutOperations {
  payout(request: PayoutRequest, signal: AbortSignal): Promise<PayoutStatus>;
  queryPayout(request: PayoutRequest, signal: AbortSignal): Promise<PayoutStatus>;
}

/** The day a bill covers (SPEC 6 Reconciliation): YYYY-MM-DD in Asia/Shanghai, as the instants [from, to). */
export interface BillRequest {
  date: string;
  from: Date;
  to: Date;
  /** The channel's top-ups created or paid that day, read only by a protocol without a bill (epay), which asks about each. */
  orders(): Promise<PaymentQuery[]>;
  /** The channel's refunds created or settled that day, read only by such a protocol too. */
  refunds(): Promise<RefundRequest[]>;
}

/** How a bill's bytes are to be read: the parsers live in libs/recon, one per format. */
export type BillFormat = 'sandbox' | 'epay' | 'alipay' | 'wechatpay';

/** A bill as the channel gave it, byte for byte: kept with its SHA-256 before anything reads it. */
export interface FetchedBill {
  format: BillFormat;
  raw: Buffer;
  /** The digest the provider gave with the download (wechatpay's hash_type and hash_value), checked before reading. */
  digest?: { type: string; value: string };
  /**
   * The provider's own words that it has no bill for the day because nothing was traded
   * (alipay `isp.bill_not_exist`, wechatpay `NO_STATEMENT_EXIST`): read as a bill of no lines, so
   * anything we recorded that day still stands out as `missing_channel`.
   */
  noBill?: string;
}

/** Fetching a day's bill; a protocol that has no bill builds one from a query per order. */
export interface BillOperations {
  fetchBill(request: BillRequest, signal: AbortSignal): Promise<FetchedBill>;
}

/**
 * One payment channel protocol (SPEC 6): create a payment, verify its notification, query a
 * payment; and, where the protocol has them, close an unpaid payment, refunds and payouts.
 */
export interface ChannelAdapter {
  createPayment(request: PaymentRequest, signal: AbortSignal): Promise<PaymentCreated>;
  /** null when the notification is not authentic or not understood. */
  verifyNotification(params: Record<string, unknown>, context?: NotificationContext): ChannelNotification | null;
  /** The body is JSON with objects inside (wechatpay): it does not fit the flat parameter map, so `params` is empty. */
  readonly notificationIsJsonDocument?: boolean;
  /** Set when the protocol answers notifications its own way (alipay: `fail`; wechatpay: 204 or a JSON FAIL). */
  readonly notificationAnswers?: NotificationAnswers;
  queryPayment(query: PaymentQuery, signal: AbortSignal): Promise<PaymentStatus>;
  /**
   * A verified paid notification, or a paid query answer, is the provider's final word (signed
   * with the provider's own key; the sandbox is its own provider): the order is confirmed and
   * credited in the transaction that marks it paid (SPEC 5). False: the worker re-queries the
   * channel before confirming (epay, whose md5 key is a secret the merchant shares).
   */
  readonly paidIsFinal: boolean;
  /** The text body the channel expects once a notification is accepted. */
  readonly acknowledgement: string;
  /** Tells the channel an unpaid payment is closed (orderClose); absent when the protocol has no such call. */
  closePayment?(query: PaymentQuery, signal: AbortSignal): Promise<void>;
  readonly refunds?: RefundOperations;
  readonly payouts?: PayoutOperations;
  /** The daily bill reconciliation reads; absent when the adapter cannot fetch one yet. */
  readonly bills?: BillOperations;
}

/** The channel could not do what was asked (misconfigured, unreachable, refused, timed out). */
export class ChannelError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ChannelError';
  }
}
