/** SPEC 7: a Retry-After on 429 or 503 is honoured up to this. */
export const MAX_RETRY_AFTER_MS = 6 * 3_600_000;
/** SPEC 7: each scheduled delay plus up to this fraction of random jitter. */
export const RETRY_JITTER = 0.1;

/** The wait before attempt `attemptNumber + 1`: the schedule's delay with jitter, or a longer Retry-After. */
export function retryDelayMs(schedule: number[], attemptNumber: number, retryAfterMs: number | null = null, random = Math.random): number {
  const base = schedule[Math.min(Math.max(attemptNumber, 1), schedule.length) - 1];
  const scheduled = Math.round(base * (1 + RETRY_JITTER * random()));
  return retryAfterMs === null ? scheduled : Math.max(scheduled, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
}

/** A Retry-After header (delta seconds or an HTTP date) in milliseconds, or null when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return null;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/**
 * A failed attempt the policy retries: it carries the delay recorded as the delivery's
 * next_attempt_at, so BullMQ's backoff and the database agree.
 */
export class CallbackAttemptError extends Error {
  constructor(
    message: string,
    readonly retryDelayMs: number,
  ) {
    super(message);
    this.name = 'CallbackAttemptError';
  }
}

/**
 * BullMQ's custom backoff for callback jobs (`backoff: { type: 'custom' }`): a failed attempt
 * carries its delay; any other error (PostgreSQL down before anything was sent) waits the
 * schedule's delay for the job's own attempt count.
 */
export function callbackBackoff(schedule: number[]): (attemptsMade: number, type: string | undefined, err: Error | undefined) => number {
  return (attemptsMade, _type, err) => (err instanceof CallbackAttemptError ? err.retryDelayMs : retryDelayMs(schedule, attemptsMade));
}
