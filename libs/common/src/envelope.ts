import { type ApiMessage, type Lang, apiMessage, renderApiMessage } from './api-messages/api-message';
import { unixSeconds } from './time';

/** The one response shape of every region and merchant operation (SPEC 1). */
export interface Envelope<T = unknown> {
  code: number;
  msg: string;
  time: string;
  data: T;
}

export function envelope<T>(code: number, msg: string, data: T): Envelope<T> {
  return { code, msg, time: String(unixSeconds()), data };
}

/** Where a success envelope keeps its words as a key of the tables: not a JSON field (a symbol is never serialised). */
const SUCCESS_MESSAGE = Symbol('successMessage');

/** Success (code 1); `msg` in English until `localizeEnvelope` writes it in the request's language. */
export function ok<T>(data: T, message: ApiMessage = apiMessage('ok')): Envelope<T> {
  const answer = envelope(1, renderApiMessage(message, 'en'), data);
  Object.defineProperty(answer, SUCCESS_MESSAGE, { value: message, enumerable: false });
  return answer;
}

/** A success envelope made by `ok`, its msg in `lang` (SPEC 2); anything else as it is. */
export function localizeEnvelope(value: unknown, lang: Lang): unknown {
  if (lang === 'en' || value === null || typeof value !== 'object') return value;
  const message = (value as { [SUCCESS_MESSAGE]?: ApiMessage })[SUCCESS_MESSAGE];
  return message ? { ...value, msg: renderApiMessage(message, lang) } : value;
}

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
