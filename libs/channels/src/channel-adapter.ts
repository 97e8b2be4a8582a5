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

/** One payment channel protocol (SPEC 6): create a payment, verify its notification, query a payment. */
export interface ChannelAdapter {
  createPayment(request: PaymentRequest, signal: AbortSignal): Promise<PaymentCreated>;
  /** null when the notification is not authentic or not understood. */
  verifyNotification(params: Record<string, unknown>): ChannelNotification | null;
  queryPayment(query: PaymentQuery, signal: AbortSignal): Promise<PaymentStatus>;
  /** The text body the channel expects once a notification is accepted. */
  readonly acknowledgement: string;
}

/** The channel could not do what was asked (misconfigured, unreachable, refused, timed out). */
export class ChannelError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ChannelError';
  }
}
