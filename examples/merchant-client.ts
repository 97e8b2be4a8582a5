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

export class MerchantClient {
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string,
    private readonly apiSecret: string,
  ) {}

  /** POST {baseUrl}/merchant/{operation} with the common parameters added and signed. Amounts: send strings. */
  async call<T = unknown>(operation: string, params: Params = {}): Promise<Envelope<T>> {
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

  /** A callback body is signed like a request: check it before trusting it (and dedupe by event_id). */
  verifyCallbackBody(body: Params): boolean {
    return typeof body.signature === 'string' && body.api_key === this.apiKey && sameHex(signParams(body, this.apiSecret), body.signature);
  }

  /**
   * The Standard Webhooks headers: `webhook-signature` holds `v1,` + base64 HMAC-SHA256 of
   * `${webhook-id}.${webhook-timestamp}.${raw body}`. Pass the raw bytes exactly as received.
   */
  verifyCallbackHeaders(headers: Record<string, string | undefined>, rawBody: string, toleranceSeconds = 300): boolean {
    const id = headers['webhook-id'];
    const timestamp = headers['webhook-timestamp'];
    const signatures = headers['webhook-signature'];
    if (!id || !timestamp || !signatures) return false;
    if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return false;
    const expected = createHmac('sha256', this.apiSecret).update(`${id}.${timestamp}.${rawBody}`).digest('base64');
    return signatures.split(' ').some((s) => {
      const [version, value] = s.split(',');
      return version === 'v1' && value !== undefined && value.length === expected.length && timingSafeEqual(Buffer.from(value), Buffer.from(expected));
    });
  }
}
