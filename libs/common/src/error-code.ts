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
  msg: string;
}

// A Record over the enum: adding a code without its status and message does not compile.
export const ERROR_INFO: Record<ErrorCode, ErrorInfo> = {
  [ErrorCode.BadRequest]: { status: 400, msg: 'Invalid parameters' },
  [ErrorCode.AuthMissing]: { status: 401, msg: 'Missing or malformed authentication parameter' },
  [ErrorCode.AuthUnknownKey]: { status: 401, msg: 'Unknown api_key' },
  [ErrorCode.AuthBadSignature]: { status: 401, msg: 'Signature does not match' },
  [ErrorCode.AuthTimestamp]: { status: 401, msg: 'Timestamp outside the allowed window' },
  [ErrorCode.AuthNonceUsed]: { status: 401, msg: 'Nonce already used' },
  [ErrorCode.MerchantDisabled]: { status: 403, msg: 'Merchant disabled' },
  [ErrorCode.ChannelUnavailable]: { status: 403, msg: 'Payment channel not available to this merchant' },
  [ErrorCode.PayMethodUnavailable]: { status: 403, msg: 'Pay method not offered by this channel' },
  [ErrorCode.OrderNotFound]: { status: 404, msg: 'Order not found' },
  [ErrorCode.RegionNotFound]: { status: 404, msg: 'Region not found' },
  [ErrorCode.RouteNotFound]: { status: 404, msg: 'Route not found' },
  [ErrorCode.MethodNotAllowed]: { status: 405, msg: 'Method not allowed' },
  [ErrorCode.IdempotencyConflict]: { status: 409, msg: 'merchant_order_no already used with different parameters' },
  [ErrorCode.StateConflict]: { status: 409, msg: 'The state of the order or refund does not allow this operation' },
  [ErrorCode.InsufficientBalance]: { status: 409, msg: 'Available balance too low' },
  [ErrorCode.PayloadTooLarge]: { status: 413, msg: 'Request body larger than 64 KiB' },
  [ErrorCode.UnsupportedMediaType]: {
    status: 415,
    msg: 'Body must be JSON (Content-Type: application/json) or a form (Content-Type: application/x-www-form-urlencoded)',
  },
  [ErrorCode.RateLimited]: { status: 429, msg: 'Too many requests' },
  [ErrorCode.Internal]: { status: 500, msg: 'Internal error' },
  [ErrorCode.ChannelFailed]: { status: 502, msg: 'Payment channel failed' },
  [ErrorCode.DependencyUnavailable]: { status: 503, msg: 'Service temporarily unavailable' },
};

export interface FieldError {
  field: string;
  message: string;
}

/** "field: message", the field named once: a message that starts with its field's name ("cny_amount must be...") stands as it is. */
function fieldMessage(field: string, message: string): string {
  return message.startsWith(`${field} `) ? message : `${field}: ${message}`;
}

/** A failure the client caused or may observe; anything else thrown is a 50000. */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly data: Record<string, unknown> | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message ?? ERROR_INFO[code].msg);
    this.name = 'DomainError';
  }

  static invalid(field: string, message: string): DomainError {
    return new DomainError(ErrorCode.BadRequest, fieldMessage(field, message), { errors: [{ field, message }] });
  }

  /** 42900 with `Retry-After` in whole seconds (at least 1) until the limiter lets the client in again. */
  static rateLimited(msBeforeNext: number, message?: string): DomainError {
    return new DomainError(ErrorCode.RateLimited, message, null, { 'retry-after': String(Math.max(1, Math.ceil(msBeforeNext / 1000))) });
  }

  static invalidFields(errors: FieldError[]): DomainError {
    const msg = errors.map((e) => fieldMessage(e.field, e.message)).join('; ');
    return new DomainError(ErrorCode.BadRequest, msg || ERROR_INFO[ErrorCode.BadRequest].msg, { errors });
  }
}
