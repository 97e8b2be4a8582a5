import { createHash } from 'node:crypto';
import { type ApiMessage, DomainError, ErrorCode } from '@app/common';
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

/** What a 40900 answer says (SPEC 2): its words, and the number of the first row (`order_no` or `refund_no`). */
export interface Conflict {
  message: ApiMessage;
  first: Record<string, string>;
}

export interface IdempotentCreate<T> {
  /** The row made earlier under the merchant's own number, if there is one. */
  findRepeat(): Promise<T | null>;
  /** One try at making it, with a number of ours drawn afresh; may find the repeat itself (under a lock). */
  create(): Promise<Created<T>>;
  /** The unique index on the merchant's own number: a concurrent repeat committed first. */
  merchantNoConstraint: string;
  /** The unique index on the number we draw: a collision draws again. */
  ourNoConstraint: string;
  /** What defines the request, by the merchant's parameter names, as stored (fen, the canonical URL, null for absent). */
  requestFields: Record<string, unknown>;
  /** The same fields as the earlier row holds them: a repeat that differs in any is refused (40900). */
  fieldsOf(value: T): Record<string, unknown>;
  /** How the 40900 names the earlier row. */
  conflict(value: T): Conflict;
}

/** The request's fields whose values differ from the earlier row's, in the request's order (absent and null are the same). */
export function differingFields(request: Record<string, unknown>, earlier: Record<string, unknown>): string[] {
  return Object.keys(request).filter((field) => canonicalJson(request[field] ?? null) !== canonicalJson(earlier[field] ?? null));
}

/** Draws of our own number before a collision is an error (one in 10^8 per draw at most). */
export const OUR_NO_ATTEMPTS = 3;

/**
 * The create path the order, sell order and refund share: answer a repeat from the first row,
 * else create; a unique violation is a concurrent repeat (answered from the winner) or a
 * collision of our number (drawn again). A repeat must be the same request (SPEC 5), else 40900
 * naming the first row and the fields that differ (SPEC 2). Anything else reaches the caller.
 */
export async function createIdempotently<T>(steps: IdempotentCreate<T>): Promise<Created<T>> {
  const answer = await createOrFindRepeat(steps);
  if (!answer.repeat) return answer;
  const differs = differingFields(steps.requestFields, steps.fieldsOf(answer.value));
  if (differs.length === 0) return answer;
  const { message, first } = steps.conflict(answer.value);
  throw new DomainError(ErrorCode.IdempotencyConflict, message, { ...first, differs });
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
