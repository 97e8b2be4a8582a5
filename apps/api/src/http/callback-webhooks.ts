import type { OpenAPIObject } from '@nestjs/swagger';
import { TEST_EVENT_TYPE } from '@app/callbacks';
import type { CancelReason } from '@app/orders';
import { ORDER_STATUSES, REFUND_STATUSES } from '@app/db';

type Schema = Record<string, unknown>;
type Webhooks = NonNullable<OpenAPIObject['webhooks']>;

/** The tag of the callbacks in the document (openapi.ts declares it). */
export const CALLBACKS_TAG = 'callbacks';

const CANCEL_REASONS: CancelReason[] = ['expired', 'failed', 'closed', 'refused'];
const ORDER_EVENTS = ['order.paid', 'order.completed', 'order.cancelled'] as const;
const REFUND_EVENTS = ['refund.succeeded', 'refund.failed'] as const;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const nullable = (schema: Schema): Schema => ({ ...schema, type: [schema.type as string, 'null'] });
const YUAN: Schema = { type: 'string', pattern: '^\\d{1,10}\\.\\d{2}$', description: 'Yuan as decimal text with two decimals' };
const FEN: Schema = { type: 'integer', description: 'Fen (1/100 yuan)' };
const UNIX: Schema = { type: 'integer', description: 'Unix seconds' };
const NUMBER_22: Schema = { type: 'string', pattern: '^\\d{22}$' };
const OWN_NUMBER: Schema = { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' };

/** The schemas the callback bodies are made of, for components.schemas. */
export const CALLBACK_SCHEMAS: Record<string, Schema> = {
  CallbackSignature: {
    type: 'object',
    description:
      'Every callback body ends with these, signed exactly as a request is (SPEC 3) with your api_secret; during a rotation grace with the previous secret (the new one once the grace ends). Each attempt is signed afresh.',
    required: ['api_key', 'timestamp', 'nonce', 'signature'],
    properties: {
      api_key: { type: 'string', description: 'Your api_key' },
      timestamp: UNIX,
      nonce: { type: 'string', pattern: '^[A-Za-z0-9_-]{8,64}$', description: 'Claimed in the nonce store: this body sent back to the API is refused 40104' },
      signature: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'Hex HMAC-SHA256 of the canonical string of every other field' },
    },
  },
  OrderEventCallback: {
    description: "An order's event: the order as it was when the event happened.",
    allOf: [
      {
        type: 'object',
        required: [
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
        ],
        properties: {
          event_id: { type: 'string', format: 'uuid', description: 'Deduplicate by it: a resend carries the same one' },
          event: { type: 'string', enum: [...ORDER_EVENTS] },
          order_no: NUMBER_22,
          merchant_order_no: nullable(OWN_NUMBER),
          order_type: { type: 'integer', enum: [1, 2], description: '1 buy (top-up), 2 sell (payout)' },
          status: { type: 'string', enum: [...ORDER_STATUSES] },
          cny_amount: YUAN,
          merchant_actual_amount: FEN,
          service_rate: { type: 'string', pattern: '^\\d\\.\\d{8}$' },
          service_amount: FEN,
          createtime: UNIX,
          updatetime: UNIX,
          paid_at: nullable(UNIX),
          reason: { type: 'string', enum: CANCEL_REASONS, description: 'order.cancelled only: why' },
        },
      },
      ref('CallbackSignature'),
    ],
  },
  RefundEventCallback: {
    description: "A refund's outcome: the refund as refundQuery shows it, and its order's numbers.",
    allOf: [
      {
        type: 'object',
        required: [
          'event_id',
          'event',
          'refund_no',
          'merchant_refund_no',
          'order_no',
          'merchant_order_no',
          'refund_amount',
          'status',
          'reason',
          'createtime',
          'updatetime',
        ],
        properties: {
          event_id: { type: 'string', format: 'uuid', description: 'Deduplicate by it: a resend carries the same one' },
          event: { type: 'string', enum: [...REFUND_EVENTS] },
          refund_no: NUMBER_22,
          merchant_refund_no: OWN_NUMBER,
          order_no: NUMBER_22,
          merchant_order_no: nullable(OWN_NUMBER),
          refund_amount: YUAN,
          status: { type: 'string', enum: [...REFUND_STATUSES] },
          reason: nullable({ type: 'string', maxLength: 128 }),
          createtime: UNIX,
          updatetime: UNIX,
        },
      },
      ref('CallbackSignature'),
    ],
  },
  TestEventCallback: {
    description: "Sent by callbackTest and the portal's Send test event: nothing happened, check your receiver with it.",
    allOf: [
      {
        type: 'object',
        required: ['event_id', 'event'],
        properties: { event_id: { type: 'string', format: 'uuid' }, event: { type: 'string', enum: [TEST_EVENT_TYPE] } },
      },
      ref('CallbackSignature'),
    ],
  },
};

const header = (name: string, description: string, schema: Schema) => ({ name, in: 'header' as const, required: true, description, schema });

/** The headers every callback carries (SPEC 7), Standard Webhooks' among them. */
const CALLBACK_HEADERS = [
  header('webhook-id', 'Standard Webhooks: the event_id', { type: 'string', format: 'uuid' }),
  header('webhook-timestamp', 'Standard Webhooks: Unix seconds of this attempt; refuse one far from your clock', { type: 'string', pattern: '^\\d+$' }),
  header(
    'webhook-signature',
    "Standard Webhooks: `v1,` + base64 HMAC-SHA256 of `webhook-id.webhook-timestamp.body` over the exact bytes received, key = your api_secret's UTF-8 bytes (secret `whsec_` + base64(api_secret) for their libraries); during a rotation grace two space-separated entries, one per secret: accept when either verifies",
    { type: 'string', pattern: '^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$' },
  ),
  header('X-Event-Id', 'The event_id', { type: 'string', format: 'uuid' }),
  header('X-Event-Type', 'The event', { type: 'string' }),
  header('X-Delivery-Attempt', 'This attempt of the delivery, from 1', { type: 'string', pattern: '^[1-9]\\d*$' }),
];

/** What your receiver answers, and what the service does with it (SPEC 7). */
const CALLBACK_RESPONSES = {
  200: {
    description:
      'Accepted: any 2xx whose body, trimmed, is `success` (any case) or empty. Anything else, a timeout (10 s) or a refused connection is a failed attempt, retried on the schedule.',
    content: { 'text/plain': { schema: { type: 'string', example: 'success' } } },
  },
  410: { description: 'Gone: the delivery ends as failed at once, no retry' },
  429: {
    description: 'Too many: retried after `Retry-After` (at most 6 h) instead of the schedule',
    headers: { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } } },
  },
  503: {
    description: 'Unavailable: retried after `Retry-After` (at most 6 h) instead of the schedule',
    headers: { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } } },
  },
};

function webhook(event: string, summary: string, description: string, body: string): Webhooks[string] {
  return {
    post: {
      operationId: `callback_${event.replace('.', '_')}`,
      tags: [CALLBACKS_TAG],
      summary,
      description: `${description}\n\nPOSTed to the order's notify_url (a refund's own for refund events), else your notify URL, as JSON. Verify the body's signature or webhook-signature before acting on it; deduplicate by event_id.`,
      // Nothing to present: the service signs what it sends, and your receiver checks it (the headers and the body's signature).
      security: [],
      parameters: CALLBACK_HEADERS,
      requestBody: { required: true, content: { 'application/json': { schema: ref(body) } } },
      responses: CALLBACK_RESPONSES,
    },
  };
}

/** The callbacks the service sends to merchants, as OpenAPI 3.1 `webhooks` (SPEC 7). */
export function callbackWebhooks(): Webhooks {
  return {
    'order.paid': webhook(
      'order.paid',
      'An order was paid',
      'A top-up the payer paid (or a payout the channel paid out). Later than a cancel when the money arrived after it.',
      'OrderEventCallback',
    ),
    'order.completed': webhook(
      'order.completed',
      'An order was completed',
      "The top-up's merchant_actual_amount is in your available balance (a payout is final). Never sent before the order's order.paid was delivered.",
      'OrderEventCallback',
    ),
    'order.cancelled': webhook(
      'order.cancelled',
      'An order was cancelled',
      'expired, closed by orderClose or by the channel, failed at the channel when the order was created (50200), or a payout refused (its debit given back); `reason` says which. A failed payment attempt cancels nothing: the order stays payable.',
      'OrderEventCallback',
    ),
    'refund.succeeded': webhook('refund.succeeded', 'A refund succeeded', 'The channel returned the money to the payer.', 'RefundEventCallback'),
    'refund.failed': webhook(
      'refund.failed',
      'A refund failed',
      'The channel refused it; refund_amount is back in your available balance.',
      'RefundEventCallback',
    ),
    [TEST_EVENT_TYPE]: webhook(TEST_EVENT_TYPE, 'A test event', 'Sent at once by callbackTest or Send test event, never retried.', 'TestEventCallback'),
  };
}
