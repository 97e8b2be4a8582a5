import { createHmac, randomBytes } from 'node:crypto';
import { sign } from '@app/signature';

/** SPEC 7's body fields in the order merchants read them; the signature does not depend on it. */
const FIELD_ORDER = [
  'event_id',
  'event',
  'order_no',
  'merchant_order_no',
  'order_type',
  'status',
  'cny_amount',
  'merchant_actual_amount',
  'service_rate',
  'service_amount',
  'createtime',
  'updatetime',
  'paid_at',
] as const;

export interface CallbackEvent {
  id: string;
  type: string;
  /** The facts written with the event (everything but the per-attempt fields). */
  payload: Record<string, unknown>;
}

export interface SignedCallback {
  /** The exact bytes sent. */
  body: string;
  headers: Record<string, string>;
}

/** `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the secret's UTF-8 bytes (Standard Webhooks). */
export function webhookSignature(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', secret).update(`${id}.${timestamp}.${body}`, 'utf8').digest('base64')}`;
}

/** A fresh nonce for one callback: 16 characters of the request alphabet [A-Za-z0-9_-]. */
export function newCallbackNonce(): string {
  return randomBytes(12).toString('base64url');
}

/**
 * The callback of SPEC 7 for one attempt: the event's facts plus api_key, timestamp, `nonce`
 * (already claimed in the nonce store by the caller, SPEC 3) and the request-style
 * `signature`, then the Standard Webhooks headers over the exact body bytes. During a
 * rotation's grace (`previousApiSecret`), the body is signed with the previous secret, so a
 * receiver not yet given the new one keeps accepting, and `webhook-signature` carries both
 * `v1,` entries, the new one first (SPEC 3). After the grace (or a grace of 0) only the new one.
 */
export function buildSignedCallback(
  event: CallbackEvent,
  merchant: { apiKey: string; apiSecret: string; previousApiSecret?: string | null },
  attemptNumber: number,
  nonce: string,
  now = Date.now(),
): SignedCallback {
  const facts: Record<string, unknown> = { ...event.payload, event_id: event.id, event: event.type };
  const params: Record<string, unknown> = {};
  for (const key of FIELD_ORDER) if (key in facts) params[key] = facts[key];
  for (const [key, value] of Object.entries(facts)) {
    if (!(key in params) && !['api_key', 'timestamp', 'nonce', 'signature'].includes(key)) params[key] = value;
  }
  const timestamp = Math.floor(now / 1000);
  params.api_key = merchant.apiKey;
  params.timestamp = timestamp;
  params.nonce = nonce;
  params.signature = sign(params, merchant.previousApiSecret || merchant.apiSecret);
  const body = JSON.stringify(params);
  return {
    body,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'user-agent': 'merchant-pay-callbacks/1',
      'x-event-id': event.id,
      'x-event-type': event.type,
      'x-delivery-attempt': String(attemptNumber),
      'webhook-id': event.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': [merchant.apiSecret, ...(merchant.previousApiSecret ? [merchant.previousApiSecret] : [])]
        .map((secret) => webhookSignature(secret, event.id, timestamp, body))
        .join(' '),
    },
  };
}
