import type { PayMode } from './pay-modes';

/** What the service asks a channel to do for one order. */
export interface PaymentRequest {
  orderNo: string;
  amountFen: number;
  payMethod: string;
  /** Shown to the payer by the channel (SPEC 5 subject). */
  subject: string;
  /** Where the channel posts its notification: {PUBLIC_BASE_URL}{API_PREFIX}/channel/notify/{channelId}. */
  notifyUrl: string;
  /** The order's return_url (SPEC 5): where the payer's browser goes after paying or giving up; null when the shop gave none. */
  returnUrl: string | null;
  /** The order's expiry: channels that take one stop accepting the payment then. */
  expiresAt: Date;
}

export interface PaymentCreated {
  payUrl: string;
  /** The channel's own number for the payment, when it gives one at creation. */
  channelTradeNo: string | null;
}

/**
 * A notification that verified: what the channel says happened to an order. `paid`: its
 * payment succeeded; `failed`: a payment attempt failed; `closed`: the channel closed the unpaid
 * trade (cancels a pending order); `noted`: verified, and nothing for us to move (alipay's
 * TRADE_FINISHED of a settled trade, a refund's notice when the refund is not ours).
 */
export interface ChannelNotification {
  orderNo: string;
  channelTradeNo: string | null;
  amountFen: number;
  outcome: 'paid' | 'failed' | 'closed' | 'noted';
  /** Set when the notification is about a refund of the order (wechatpay REFUND.*, alipay's refund notices), not its payment. */
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
  /** The order's amount, which was the payment's (wechatpay's refund names the payment's total). */
  orderAmountFen: number;
}

/**
 * A provider's documented refusal (SPEC 6, outcomes a channel did not state): the provider says
 * it did not and will not do what was asked, in words its own documentation lists as a refusal.
 * The only answer on which money goes back to a merchant; anything else is an unknown outcome.
 */
export interface Refusal {
  /** The provider's code as it sent it (`ACQ.TRADE_NOT_EXIST`, `NOT_ENOUGH`, `CLOSED`, `-1`). */
  code: string;
  /** The provider's words, short and printable, stored with the refund or payout (never a secret). */
  failure: string;
  /** Where the provider documents `code` as a refusal. */
  document: string;
}

/**
 * One provider document's refusal codes, kept in one place per adapter: `refusal(code)` is a
 * Refusal only for a code the document lists; any other code is not one (an unknown outcome).
 */
export class RefusalTable {
  constructor(
    /** The provider page the codes come from. */
    readonly document: string,
    /** code -> what the document says it means. */
    readonly codes: Readonly<Record<string, string>>,
  ) {}

  refusal(code: unknown, failure: string): Refusal | null {
    if (typeof code !== 'string' || !Object.hasOwn(this.codes, code)) return null;
    return { code, failure, document: this.document };
  }
}

/**
 * What the channel says of a refund. `processing`: it took the refund and will finish it later;
 * `not_found` (queries only): it never got the request, so asking again cannot refund twice;
 * `failed`: a documented refusal, the one state on which the debit is given back. An outcome the
 * channel did not state (a system error, a 5xx, a timeout, an unsigned answer) is a ChannelError.
 */
export type RefundStatus =
  | { state: 'succeeded'; channelRefundNo: string | null }
  | { state: 'processing'; channelRefundNo: string | null }
  | { state: 'not_found'; channelRefundNo: null }
  | { state: 'failed'; channelRefundNo: string | null; refusal: Refusal };

/** Money sent to a sell order's payee. `payeeAccount` is the card number in clear: never log it. */
export interface PayoutRequest {
  orderNo: string;
  amountFen: number;
  payeeName: string;
  payeeAccount: string;
  payeeBank: string;
}

/** What the channel says of a payout, under RefundStatus's rules: only `refused` (a documented refusal) gives the debit back. */
export type PayoutStatus =
  | { state: 'paid'; channelPayoutNo: string | null }
  | { state: 'processing'; channelPayoutNo: string | null }
  | { state: 'not_found'; channelPayoutNo: null }
  | { state: 'refused'; channelPayoutNo: null; refusal: Refusal };

/**
 * What the channel says of closing an unpaid payment: `closed` (or never opened, which is as
 * good), or a documented refusal (alipay ACQ.TRADE_STATUS_ERROR: the trade was paid meanwhile).
 * Neither a refusal nor an unknown outcome (a ChannelError) tells whether the payer paid: the
 * query decides.
 */
export type CloseOutcome = { state: 'closed' } | { state: 'refused'; refusal: Refusal };

/**
 * Refunds of paid orders. An outcome the channel did not state (a timeout, a 5xx, a system
 * error, an unsigned answer) is a ChannelError: the caller then queries before it asks again, so
 * a refund is never made twice and never given back unless the provider refused it.
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

/** The service's own pay page of an order (SPEC 6): the pay_url of an alipay or wechatpay order, with its token. */
export type CashierUrl = (orderNo: string) => string;

/** What the cashier knows of the payer, for the modes that need it. */
export interface CashierPayer {
  /** The client address as the service trusts it (TRUST_PROXY): WeChat H5's payer_client_ip. */
  ip: string;
  /** JSAPI: the payer's openid under the channel's appid (WeChat OAuth snsapi_base). */
  openid?: string;
}

/** Where the provider's own pages send the payer (SPEC 5 return_url). */
export interface CashierReturn {
  /** After paying, or giving up, at the provider: the order's return_url, else the cashier's own waiting page. */
  returnUrl: string;
  /** Where giving up midway leads (Alipay wap's quit_url): the order's return_url, else the cashier page. */
  quitUrl: string;
}

/** A trade a provider opened for one mode before the payer is sent to it (WeChat's code_url, h5_url, prepay_id): kept, and used again while valid. */
export interface Prepay {
  value: string;
  validUntil: Date;
}

/** What the cashier page offers the payer in one mode. */
export type CashierStep =
  /** A link to the provider's page: Alipay's signed gateway URL; WeChat's h5_url, which checks the Referer against the registered H5 domain. */
  | { kind: 'link'; url: string; sendsReferrer: boolean }
  /** A QR code to scan with another device: WeChat's code_url. */
  | { kind: 'qr'; codeUrl: string }
  /** WeixinJSBridge.invoke('getBrandWCPayRequest', request): WeChat's JSAPI, signed for this page. */
  | { kind: 'jsapi'; request: Record<string, string> };

/** The payer's identity for JSAPI: WeChat's web OAuth, scope snsapi_base (silent, no prompt). */
export interface PayerIdentity {
  /** WeChat's authorize URL that comes back to `redirectUri` with `code` and `state`. */
  authorizeUrl(redirectUri: string, state: string): string;
  /**
   * The openid a code stands for; `snapshot`: WeChat's snapshot-page visitor (a virtual account
   * that cannot pay). Null when the code was used already (a reload of the page it came back to):
   * the payer is sent for a new one. A ChannelError when WeChat refuses otherwise.
   */
  openid(code: string, signal: AbortSignal): Promise<{ openid: string; snapshot: boolean } | null>;
}

/**
 * The cashier's side of a provider (SPEC 6, Pay modes and the cashier): which modes the channel
 * may use, the prepay of the modes that need one (made at the provider, stored and reused while
 * valid), and what the page does in each mode.
 */
export interface CashierOperations {
  /** The modes the channel's config allows, in the provider's order. */
  readonly modes: readonly PayMode[];
  /** Present when the provider opens its trade before the payer is sent (WeChat): one trade type per order number. */
  prepay?(mode: PayMode, request: PaymentRequest, payer: CashierPayer, signal: AbortSignal): Promise<Prepay>;
  /** The page's step in `mode`, from its prepay where it has one, else made now (Alipay's URL is signed as the page is shown). */
  step(mode: PayMode, request: PaymentRequest, prepay: Prepay | null, back: CashierReturn): CashierStep;
  readonly payerIdentity?: PayerIdentity;
}

/**
 * One payment channel protocol (SPEC 6): create a payment, verify its notification, query a
 * payment; and, where the protocol has them, close an unpaid payment, refunds and payouts.
 */
export interface ChannelAdapter {
  createPayment(request: PaymentRequest, signal: AbortSignal): Promise<PaymentCreated>;
  /** null when the notification is not authentic or not understood; a promise where checking needs a fetch (WeChat's platform certificates). */
  verifyNotification(params: Record<string, unknown>, context?: NotificationContext): ChannelNotification | null | Promise<ChannelNotification | null>;
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
  closePayment?(query: PaymentQuery, signal: AbortSignal): Promise<CloseOutcome>;
  readonly refunds?: RefundOperations;
  readonly payouts?: PayoutOperations;
  /** The daily bill reconciliation reads; absent when the adapter cannot fetch one yet. */
  readonly bills?: BillOperations;
  /** The providers the cashier page serves (alipay, wechatpay): pay_url is the cashier's. */
  readonly cashier?: CashierOperations;
}

/**
 * The channel's answer did not state an outcome we can act on (misconfigured, unreachable, timed
 * out, a system error, an unsigned or unreadable answer): for money out, an unknown outcome.
 */
export class ChannelError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ChannelError';
  }
}
