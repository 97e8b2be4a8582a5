/**
 * A small merchant client for this service, with no dependency beyond Node >= 18: copy it into
 * your project. It signs requests, calls the merchant API and verifies callbacks.
 */
import { createHmac, timingSafeEqual, randomBytes } from 'node:crypto';

type Params = Record<string, unknown>;

function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Params;
  return `{${Object.keys(obj)
    .sort(byteOrder)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`)
    .join(',')}}`;
}

/** key=value pairs of every parameter but `signature`, without null or "" values, sorted by key bytes, joined by &. */
export function canonicalString(params: Params): string {
  return Object.keys(params)
    .filter((k) => k !== 'signature' && params[k] !== null && params[k] !== undefined && params[k] !== '')
    .sort(byteOrder)
    .map((k) => {
      const v = params[k];
      return `${k}=${typeof v === 'object' ? canonicalJson(v) : String(v)}`;
    })
    .join('&');
}

export function signParams(params: Params, apiSecret: string): string {
  return createHmac('sha256', apiSecret).update(canonicalString(params)).digest('hex');
}

function sameHex(a: string, b: string): boolean {
  const x = Buffer.from(a.toLowerCase(), 'utf8');
  const y = Buffer.from(b.toLowerCase(), 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

export interface Envelope<T = unknown> {
  code: number;
  msg: string;
  time: string;
  data: T;
}

/** An order as orderQueryDetail answers it. */
export interface Order {
  order_no: string;
  merchant_order_no: string | null;
  order_type: number;
  cny_amount: string;
  merchant_actual_amount: number;
  service_rate: string;
  service_amount: number;
  status: 'pending' | 'paid' | 'confirmed' | 'completed' | 'cancelled';
  createtime: number;
  updatetime: number;
}

/** statementQuery's answer: a day of your balance, amounts in fen (SPEC 6). */
export interface Statement {
  date: string;
  timezone: 'Asia/Shanghai';
  opening_balance: { available_fen: number; deposit_fen: number };
  closing_balance: { available_fen: number; deposit_fen: number };
  movements: {
    entry_id: string;
    time: number;
    kind: string;
    account: 'available' | 'deposit';
    amount_fen: number;
    order_no: string;
    merchant_order_no: string | null;
    refund_no: string | null;
    available_after_fen: number;
    deposit_after_fen: number;
  }[];
  total: number;
}

export interface Refund {
  refund_no: string;
  merchant_refund_no: string;
  order_no: string;
  refund_amount: string;
  status: 'processing' | 'succeeded' | 'failed';
  reason: string | null;
  createtime: number;
  updatetime: number;
}

/** createSellOrder's answer: createOrder's fields (order_type 2, pay_url null) and the payee, its account masked. */
export interface SellOrder {
  order_no: string;
  merchant_order_no: string | null;
  status: string;
  order_type: number;
  cny_amount: string;
  merchant_amount: string;
  service_amount: number;
  merchant_actual_amount: number;
  pay_url: null;
  payee_name: string;
  payee_bank: string;
  payee_account: string;
}

/** One callback delivery with its attempts, as callbackQueryList answers it. */
export interface CallbackDelivery {
  delivery_id: string;
  event_id: string;
  event: string;
  url: string | null;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: { at: number; http_status: number | null; duration_ms: number; error: string | null; response_excerpt: string | null }[];
}

/** balanceQuery's answer (SPEC 6): your balances now, in fen, as of `as_of` (Unix seconds). */
export interface Balance {
  available_fen: number;
  deposit_fen: number;
  as_of: number;
}

/** callbackTest's answer: the one attempt it made. */
export interface CallbackTestAttempt {
  url: string;
  http_status: number | null;
  duration_ms: number;
  success: boolean;
  error: string | null;
  response_excerpt: string | null;
}

export class MerchantClient {
  /** Every secret a callback may be signed with: the current one, and during a rotation's grace the one it replaced. */
  private readonly secrets: string[];

  /**
   * `baseUrl` is SPEC's {base_url}, e.g. https://pay.example.com/api. `previousSecret`: the secret a
   * rotation replaced, accepted on callbacks during its grace (requests are signed with `apiSecret`).
   */
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string,
    private readonly apiSecret: string,
    previousSecret?: string,
  ) {
    this.secrets = [apiSecret, previousSecret].filter((s): s is string => !!s);
  }

  /** POST {baseUrl}/merchant/{operation} with the common parameters added and signed. Amounts: send strings. */
  async call<T = unknown>(operation: string, params: Params = {}): Promise<Envelope<T>> {
    if (!/^https?:\/\/[^/]/.test(this.baseUrl ?? '')) {
      throw new Error(
        `MerchantClient: ${this.baseUrl ? `the base URL '${this.baseUrl}' is not an absolute http(s) URL` : 'the base URL is missing'}: give your {base_url}, e.g. https://pay.example.com/api`,
      );
    }
    const body: Params = {
      ...params,
      api_key: this.apiKey,
      timestamp: Math.floor(Date.now() / 1000),
      nonce: randomBytes(12).toString('hex'),
    };
    body.signature = signParams(body, this.apiSecret);
    const res = await fetch(`${this.baseUrl}/merchant/${operation}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return (await res.json()) as Envelope<T>;
  }

  /** Close a pending buy order (code 1 also when it was cancelled already; 40901 once paid). */
  orderClose(orderNo: string): Promise<Envelope<Order>> {
    return this.call('orderClose', { order_no: orderNo });
  }

  /**
   * Refund a completed buy order, wholly or in part. `merchantRefundNo` makes a retry safe: the
   * same parameters answer the first refund. The outcome comes as refund.succeeded / refund.failed.
   */
  refundCreate(params: { orderNo: string; refundAmount: string; merchantRefundNo: string; reason?: string; notifyUrl?: string }): Promise<Envelope<Refund>> {
    return this.call('refundCreate', {
      order_no: params.orderNo,
      refund_amount: params.refundAmount,
      merchant_refund_no: params.merchantRefundNo,
      reason: params.reason,
      notify_url: params.notifyUrl,
    });
  }

  /** One refund, by the service's refund_no or your merchant_refund_no. */
  refundQuery(by: { refundNo: string } | { merchantRefundNo: string }): Promise<Envelope<Refund>> {
    return this.call('refundQuery', 'refundNo' in by ? { refund_no: by.refundNo } : { merchant_refund_no: by.merchantRefundNo });
  }

  /** An order's refunds, newest first. */
  refundQueryList(orderNo: string): Promise<Envelope<{ list: Refund[]; total: number }>> {
    return this.call('refundQueryList', { order_no: orderNo });
  }

  /** Your statement of one Asia/Shanghai day (YYYY-MM-DD): opening balance, every movement, closing balance. */
  statementQuery(date: string): Promise<Envelope<Statement>> {
    return this.call('statementQuery', { date });
  }

  /**
   * Pay your customer out of your available balance (cny_amount plus the fee is debited at once).
   * The answer shows the payee account masked; order.paid / order.completed or order.cancelled follow.
   */
  createSellOrder(params: {
    cnyAmount: string;
    paychannelId: number;
    payeeName: string;
    payeeAccount: string;
    payeeBank: string;
    merchantOrderNo?: string;
    notifyUrl?: string;
  }): Promise<Envelope<SellOrder>> {
    return this.call('createSellOrder', {
      cny_amount: params.cnyAmount,
      paychannel_id: params.paychannelId,
      payee_name: params.payeeName,
      payee_account: params.payeeAccount,
      payee_bank: params.payeeBank,
      merchant_order_no: params.merchantOrderNo,
      notify_url: params.notifyUrl,
    });
  }

  /** Queue the order's latest callback event again (same event_id); at most 10 per order per hour. */
  callbackResend(orderNo: string): Promise<Envelope<{ event_id: string; event: string; delivery_id: string }>> {
    return this.call('callbackResend', { order_no: orderNo });
  }

  /** The order's callback deliveries, newest first, each with every attempt. */
  callbackQueryList(orderNo: string): Promise<Envelope<{ list: CallbackDelivery[]; total: number }>> {
    return this.call('callbackQueryList', { order_no: orderNo });
  }

  /**
   * After your endpoint was down: queue again every event whose delivery failed from `startTime`
   * (Unix seconds, at most 7 days back) to `endTime` (default now). Once a minute at most.
   */
  callbackRecover(startTime: number, endTime?: number): Promise<Envelope<{ queued: number }>> {
    return this.call('callbackRecover', { start_time: startTime, end_time: endTime });
  }

  /** Send a signed `webhook.test` event now to `url` (default: your notify URL) and get the attempt back. */
  callbackTest(url?: string): Promise<Envelope<CallbackTestAttempt>> {
    return this.call('callbackTest', { url });
  }

  /** Your available and deposit balances now, in fen (SPEC 6). */
  balanceQuery(): Promise<Envelope<Balance>> {
    return this.call('balanceQuery');
  }

  /**
   * A callback body is signed like a request: check it before trusting it (and dedupe by event_id).
   * During a rotation's grace the body is signed with one of the two secrets (the previous one
   * until the grace ends, SPEC 3): any secret this client holds passes.
   */
  verifyCallbackBody(body: Params, toleranceSeconds = 300): boolean {
    if (typeof body.signature !== 'string' || body.api_key !== this.apiKey || !fresh(body.timestamp, toleranceSeconds)) return false;
    const given = body.signature;
    return this.secrets.some((secret) => sameHex(signParams(body, secret), given));
  }

  /**
   * The Standard Webhooks headers: `webhook-signature` holds `v1,` + base64 HMAC-SHA256 of
   * `${webhook-id}.${webhook-timestamp}.${raw body}`. Pass the raw bytes exactly as received.
   * During a secret rotation's grace it holds two space-separated entries, one per secret: any
   * entry with any secret this client holds passes.
   */
  verifyCallbackHeaders(headers: Record<string, string | string[] | undefined>, rawBody: string, toleranceSeconds = 300): boolean {
    const header = (name: string) => {
      const value = headers[name] ?? Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
      return Array.isArray(value) ? value[0] : value;
    };
    const id = header('webhook-id');
    const timestamp = header('webhook-timestamp');
    const signatures = header('webhook-signature');
    if (!id || !timestamp || !signatures || !fresh(timestamp, toleranceSeconds)) return false;
    const expected = this.secrets.map((secret) => createHmac('sha256', secret).update(`${id}.${timestamp}.${rawBody}`).digest('base64'));
    return signatures.split(' ').some((s) => {
      const [version, value] = s.split(',');
      return version === 'v1' && value !== undefined && expected.some((e) => value.length === e.length && timingSafeEqual(Buffer.from(value), Buffer.from(e)));
    });
  }

  /** Both checks on a received callback: its parsed body, or null when either fails. */
  verifyCallback(headers: Record<string, string | string[] | undefined>, rawBody: string): Params | null {
    let body: unknown;
    try {
      body = JSON.parse(rawBody);
    } catch {
      return null;
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
    return this.verifyCallbackHeaders(headers, rawBody) && this.verifyCallbackBody(body as Params) ? (body as Params) : null;
  }
}

/** A callback's timestamp within the tolerance of now: an old callback replayed is refused. */
function fresh(timestamp: unknown, toleranceSeconds: number): boolean {
  const seconds = typeof timestamp === 'number' ? timestamp : typeof timestamp === 'string' && /^\d{1,15}$/.test(timestamp) ? Number(timestamp) : NaN;
  return Number.isInteger(seconds) && Math.abs(Date.now() / 1000 - seconds) <= toleranceSeconds;
}
