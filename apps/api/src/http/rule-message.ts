import type { ValidationOptions } from 'class-validator';
import { type ApiMessageKey, type ApiMessageParams, apiMessage, renderApiMessage } from '@app/common';

/** Where a rule keeps its words as a key of the tables, for the pipe (class-validator hands a rule's `context` back with its failure). */
export const RULE_MESSAGE = 'apiMessage';

/**
 * A DTO rule's options: class-validator's `message` in English (what `data.errors` carries) and
 * the same words as a key of the tables in its `context`, so `msg` can be written in the
 * request's language (SPEC 2).
 */
export function ruleMessage<K extends ApiMessageKey>(key: K, ...params: ApiMessageParams<K>): ValidationOptions {
  const message = apiMessage(key, ...params);
  return { message: renderApiMessage(message, 'en'), context: { [RULE_MESSAGE]: message } };
}
