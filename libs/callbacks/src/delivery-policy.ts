import type { SendOutcome } from './callback-sender';
import type { CircuitSignal } from './circuit';
import { retryDelayMs } from './retry-policy';

/** What follows one attempt of a delivery (SPEC 7 Success, Retries, Fairness). */
export type DeliveryVerdict =
  | { state: 'succeeded'; circuit: 'success' }
  | { state: 'pending'; retryInMs: number; circuit: CircuitSignal }
  | { state: 'failed'; reason: 'gone' | 'exhausted' | 'blocked'; circuit: CircuitSignal };

/**
 * SPEC 7 Address: a notify host that resolves to a refused (private, reserved) address can never
 * be sent to while CALLBACK_ALLOW_PRIVATE is off; the delivery ends after this many such attempts
 * (a few, since DNS may change), not after the whole 24-hour schedule.
 */
export const BLOCKED_ADDRESS_ATTEMPTS = 3;

/** One finished attempt as the policy reads it. */
export interface AttemptFacts {
  /** 1 for a delivery's first attempt. */
  number: number;
  outcome: Pick<SendOutcome, 'ok' | 'httpStatus' | 'retryAfterMs' | 'blocked'>;
  /**
   * Nothing reached the merchant because of us (no address, the nonce store down): the
   * schedule goes on, but the merchant's circuit learns nothing from it.
   */
  ourSide: boolean;
}

/**
 * The one owner of "what follows a callback attempt": succeeded, retry after how long (the
 * schedule with jitter, or a longer Retry-After), failed for good (410, or the last attempt
 * spent), and whether it counts against the circuit. Pure: the processor applies the verdict,
 * SQL stores it, BullMQ waits the delay (the one clock), the key's circuit takes the signal
 * (Circuit.after); none of them decides again.
 */
export class DeliveryPolicy {
  /** Every attempt a delivery gets: the first plus one per scheduled delay. */
  readonly maxAttempts: number;

  constructor(
    private readonly scheduleMs: readonly number[],
    private readonly random: () => number = Math.random,
  ) {
    this.maxAttempts = scheduleMs.length + 1;
  }

  afterAttempt({ number, outcome, ourSide }: AttemptFacts): DeliveryVerdict {
    if (outcome.ok) return { state: 'succeeded', circuit: 'success' };
    const circuit: CircuitSignal = ourSide ? 'none' : 'failure';
    if (outcome.httpStatus === 410) return { state: 'failed', reason: 'gone', circuit };
    if (outcome.blocked && number >= Math.min(BLOCKED_ADDRESS_ATTEMPTS, this.maxAttempts)) return { state: 'failed', reason: 'blocked', circuit };
    if (number >= this.maxAttempts) return { state: 'failed', reason: 'exhausted', circuit };
    return { state: 'pending', retryInMs: retryDelayMs([...this.scheduleMs], number, outcome.retryAfterMs, this.random), circuit };
  }
}
