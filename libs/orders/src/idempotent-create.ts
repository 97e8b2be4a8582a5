import { createHash } from 'node:crypto';
import { DomainError, ErrorCode } from '@app/common';
import { uniqueViolation } from '@app/db';
import { canonicalJson } from '@app/signature';

/** What defines a create request: a repeat of the merchant's own number must match it exactly (SPEC 5). */
export function requestHash(fields: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson(fields)).digest('hex');
}

/** A create's answer: the row, and whether it was there already (a repeat of the merchant's number). */
export interface Created<T> {
  value: T;
  repeat: boolean;
}

export const created = <T>(value: T): Created<T> => ({ value, repeat: false });
export const repeated = <T>(value: T): Created<T> => ({ value, repeat: true });

export interface IdempotentCreate<T> {
  /** The row made earlier under the merchant's own number, if there is one. */
  findRepeat(): Promise<T | null>;
  /** One try at making it, with a number of ours drawn afresh; may find the repeat itself (under a lock). */
  create(): Promise<Created<T>>;
  /** The unique index on the merchant's own number: a concurrent repeat committed first. */
  merchantNoConstraint: string;
  /** The unique index on the number we draw: a collision draws again. */
  ourNoConstraint: string;
  /** This request's requestHash, and the stored row's: a repeat that differs is refused (40900). */
  requestHash: string;
  requestHashOf(value: T): string;
  /** The 40900 message, when the default does not name the merchant's number. */
  conflictMessage?: string;
}

/** Draws of our own number before a collision is an error (one in 10^8 per draw at most). */
export const OUR_NO_ATTEMPTS = 3;

/**
 * The create path the order, sell order and refund share: answer a repeat from the first row,
 * else create; a unique violation is a concurrent repeat (answered from the winner) or a
 * collision of our number (drawn again). A repeat must be the same request (SPEC 5), else 40900.
 * Anything else reaches the caller.
 */
export async function createIdempotently<T>(steps: IdempotentCreate<T>): Promise<Created<T>> {
  const answer = await createOrFindRepeat(steps);
  if (answer.repeat && steps.requestHashOf(answer.value) !== steps.requestHash) throw new DomainError(ErrorCode.IdempotencyConflict, steps.conflictMessage);
  return answer;
}

async function createOrFindRepeat<T>(steps: IdempotentCreate<T>): Promise<Created<T>> {
  const earlier = await steps.findRepeat();
  if (earlier) return repeated(earlier);
  for (let attempt = 1; ; attempt++) {
    try {
      return await steps.create();
    } catch (err) {
      const constraint = uniqueViolation(err);
      if (constraint === steps.merchantNoConstraint) {
        const winner = await steps.findRepeat();
        if (winner) return repeated(winner);
      }
      if (constraint === steps.ourNoConstraint && attempt < OUR_NO_ATTEMPTS) continue;
      throw err;
    }
  }
}
