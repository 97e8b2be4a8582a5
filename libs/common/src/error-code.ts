import { type ApiMessage, type Lang, renderApiMessage } from './api-messages/api-message';
import type { ApiMessageKey } from './api-messages/en';

/** Every failure a client can observe: SPEC section 2. The filter maps each one exhaustively. */
export enum ErrorCode {
  BadRequest = 40000,
  AuthMissing = 40100,
  AuthUnknownKey = 40101,
  AuthBadSignature = 40102,
  AuthTimestamp = 40103,
  AuthNonceUsed = 40104,
  MerchantDisabled = 40300,
  ChannelUnavailable = 40301,
  PayMethodUnavailable = 40302,
  OrderNotFound = 40400,
  RegionNotFound = 40401,
  RouteNotFound = 40402,
  MethodNotAllowed = 40500,
  IdempotencyConflict = 40900,
  StateConflict = 40901,
  InsufficientBalance = 40902,
  PayloadTooLarge = 41300,
  UnsupportedMediaType = 41500,
  RateLimited = 42900,
  Internal = 50000,
  ChannelFailed = 50200,
  DependencyUnavailable = 50300,
}

interface ErrorInfo {
  status: number;
  /** The code's own English words (api-messages/en.ts), for the document. */
  msg: string;
}

const STATUS: Record<ErrorCode, number> = {
  [ErrorCode.BadRequest]: 400,
  [ErrorCode.AuthMissing]: 401,
  [ErrorCode.AuthUnknownKey]: 401,
  [ErrorCode.AuthBadSignature]: 401,
  [ErrorCode.AuthTimestamp]: 401,
  [ErrorCode.AuthNonceUsed]: 401,
  [ErrorCode.MerchantDisabled]: 403,
  [ErrorCode.ChannelUnavailable]: 403,
  [ErrorCode.PayMethodUnavailable]: 403,
  [ErrorCode.OrderNotFound]: 404,
  [ErrorCode.RegionNotFound]: 404,
  [ErrorCode.RouteNotFound]: 404,
  [ErrorCode.MethodNotAllowed]: 405,
  [ErrorCode.IdempotencyConflict]: 409,
  [ErrorCode.StateConflict]: 409,
  [ErrorCode.InsufficientBalance]: 409,
  [ErrorCode.PayloadTooLarge]: 413,
  [ErrorCode.UnsupportedMediaType]: 415,
  [ErrorCode.RateLimited]: 429,
  [ErrorCode.Internal]: 500,
  [ErrorCode.ChannelFailed]: 502,
  [ErrorCode.DependencyUnavailable]: 503,
};

/** A code's own words in the tables: a code without them does not compile (the key would not exist). */
export function codeMessage(code: ErrorCode): ApiMessage {
  return { key: `code.${code}` };
}

// A Record over the enum: adding a code without its status does not compile.
export const ERROR_INFO: Record<ErrorCode, ErrorInfo> = Object.fromEntries(
  (Object.entries(STATUS) as unknown as [ErrorCode, number][]).map(([code, status]) => [code, { status, msg: renderApiMessage(codeMessage(code), 'en') }]),
) as Record<ErrorCode, ErrorInfo>;

/** A parameter and what is wrong with it, as `data.errors` lists it (in English: `data` never changes with the language). */
export interface FieldError {
  field: string;
  message: string;
}

/** A parameter and what is wrong with it, in words of the tables. */
export interface FieldProblem {
  field: string;
  message: ApiMessage;
}

/** "field: message", the field named once: a message that starts with its field's name ("cny_amount must be...") stands as it is. */
function fieldMessage(field: string, message: string, lang: Lang): string {
  if (message.startsWith(`${field} `)) return message;
  return lang === 'zh-CN' ? `${field}：${message}` : `${field}: ${message}`;
}

function isFieldProblems(text: ApiMessage | readonly FieldProblem[]): text is readonly FieldProblem[] {
  return Array.isArray(text);
}

/**
 * A failure the client caused or may observe; anything else thrown is a 50000. Its words are
 * keys of the message tables, written in the request's language when answered (`msgIn`); the
 * Error's own message is the English one, for logs and tests.
 */
export class DomainError extends Error {
  private readonly text: ApiMessage | readonly FieldProblem[];

  /** `message`: the code's own words when absent; a list of bad parameters (see ofFields) is joined into one `msg`. */
  constructor(
    readonly code: ErrorCode,
    message?: ApiMessage | readonly FieldProblem[],
    readonly data: Record<string, unknown> | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super();
    this.name = 'DomainError';
    this.text = message === undefined || (Array.isArray(message) && message.length === 0) ? codeMessage(code) : message;
    this.message = this.msgIn('en');
  }

  /** `code` naming each bad parameter, with `data.errors` (SPEC 1); `msg` lists them all. */
  static ofFields(code: ErrorCode, problems: readonly FieldProblem[]): DomainError {
    const errors: FieldError[] = problems.map((p) => ({ field: p.field, message: renderApiMessage(p.message, 'en') }));
    return new DomainError(code, problems, { errors });
  }

  static invalid(field: string, message: ApiMessage): DomainError {
    return DomainError.ofFields(ErrorCode.BadRequest, [{ field, message }]);
  }

  static invalidFields(problems: readonly FieldProblem[]): DomainError {
    return DomainError.ofFields(ErrorCode.BadRequest, problems);
  }

  /** 42900 with `Retry-After` in whole seconds (at least 1) until the limiter lets the client in again. */
  static rateLimited(msBeforeNext: number, message?: ApiMessage): DomainError {
    return new DomainError(ErrorCode.RateLimited, message, null, { 'retry-after': String(Math.max(1, Math.ceil(msBeforeNext / 1000))) });
  }

  /** Whether it says `key` (itself or about one of its parameters): which refusal of its code it is. */
  says(key: ApiMessageKey): boolean {
    const text = this.text;
    return isFieldProblems(text) ? text.some((p) => p.message.key === key) : text.key === key;
  }

  /** The answer's `msg` in `lang` (SPEC 2): the same facts in other words; `code` and `data` do not change. */
  msgIn(lang: Lang): string {
    const text = this.text;
    if (!isFieldProblems(text)) return renderApiMessage(text, lang);
    return text.map((p) => fieldMessage(p.field, renderApiMessage(p.message, lang), lang)).join(lang === 'zh-CN' ? '；' : '; ');
  }
}
