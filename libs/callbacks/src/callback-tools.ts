/** SPEC 7: callbackRecover looks back at most this far. */
export const RECOVER_MAX_AGE_SECONDS = 7 * 86_400;
/** SPEC 7: an attempt's answer, as callbackQueryList shows it, is at most this many characters. */
export const LISTED_EXCERPT_CHARS = 256;
/** SPEC 7 callbackResend: at most this many resends per order per hour (an operator's retry in Bull Board counts too). */
export const RESEND_LIMIT = { max: 10, windowSeconds: 3600 };
/** callbackTest's event type: never an order's, so no merchant handler mistakes it for money. */
export const TEST_EVENT_TYPE = 'webhook.test';

/**
 * What a merchant reads (the delivery log, callbackQueryList, callbackTest, the portal) when an
 * attempt was not sent by our own fault (the nonce store, a secret that would not open): a fixed
 * text, never the exception's; the worker's log line keeps the detail (issue 29).
 */
export const INTERNAL_FAILURE_TEXT = 'not sent: internal error on our side, will retry';
/** callbackTest's answer for the same: it is never retried, the merchant may try again. */
export const INTERNAL_FAILURE_TEST_TEXT = 'not sent: internal error on our side, try again later';

/** Texts stored before INTERNAL_FAILURE_TEXT carried the exception's message: shown as the fixed text. */
const LEGACY_INTERNAL_FAILURE = /^not sent: its nonce could not be recorded\b/;

/** An attempt's error as a merchant may read it. */
export function merchantFacingError(error: string | null): string | null {
  return error !== null && LEGACY_INTERNAL_FAILURE.test(error) ? INTERNAL_FAILURE_TEXT : error;
}

/** A delivery and its attempts as the repository reads them. */
export interface ListedDelivery {
  id: string;
  eventId: string;
  event: string;
  url: string | null;
  status: 'pending' | 'succeeded' | 'failed' | 'no_address';
  attempts: { attemptedAt: Date; httpStatus: number | null; durationMs: number; error: string | null; responseExcerpt: string | null }[];
}

/** callbackQueryList's item (SPEC 7); `at` in Unix seconds like every other time of the API. */
export interface DeliveryView {
  delivery_id: string;
  event_id: string;
  event: string;
  url: string | null;
  status: 'pending' | 'succeeded' | 'failed' | 'no_address';
  attempts: { at: number; http_status: number | null; duration_ms: number; error: string | null; response_excerpt: string | null }[];
}

/** callbackTest's answer (SPEC 7): the one attempt, as the delivery log would record it. */
export interface TestAttemptView {
  url: string;
  http_status: number | null;
  duration_ms: number;
  success: boolean;
  error: string | null;
  response_excerpt: string | null;
  /**
   * Which secret signed what (issues 28, 38): the body's `signature` the previous secret during a
   * rotation's grace, else the current one; the `webhook-signature` header the current one and,
   * during the grace, the previous one too (SPEC 3).
   */
  signed_with: { body: 'current' | 'previous'; webhook_signature: ('current' | 'previous')[] };
}

/** At most `max` characters, never cutting a surrogate pair in two. */
export function firstCharacters(text: string | null, max = LISTED_EXCERPT_CHARS): string | null {
  if (text === null || text.length <= max) return text;
  return Array.from(text).slice(0, max).join('');
}

export function deliveryView(d: ListedDelivery): DeliveryView {
  return {
    delivery_id: d.id,
    event_id: d.eventId,
    event: d.event,
    url: d.url,
    status: d.status,
    attempts: d.attempts.map((a) => ({
      at: Math.floor(a.attemptedAt.getTime() / 1000),
      http_status: a.httpStatus,
      duration_ms: a.durationMs,
      error: merchantFacingError(a.error),
      response_excerpt: firstCharacters(a.responseExcerpt),
    })),
  };
}

export type RecoverWindow = { from: number; to: number } | { field: 'start_time' | 'end_time'; message: string };

/**
 * callbackRecover's window in Unix seconds (SPEC 7): from start_time to end_time (now when
 * absent), start at most 7 days back and not in the future, end not before start.
 */
export function recoverWindow(start: number, end: number | undefined, now: number): RecoverWindow {
  if (start < now - RECOVER_MAX_AGE_SECONDS) {
    return { field: 'start_time', message: `start_time must be within the last 7 days (not before ${now - RECOVER_MAX_AGE_SECONDS})` };
  }
  if (start > now) return { field: 'start_time', message: 'start_time must not be in the future' };
  const to = end ?? now;
  if (to < start) return { field: 'end_time', message: 'end_time must not be before start_time' };
  return { from: start, to };
}
