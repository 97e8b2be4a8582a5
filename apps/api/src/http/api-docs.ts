import { type Type, applyDecorators } from '@nestjs/common';
import {
  ApiBody,
  ApiExtraModels,
  ApiOkResponse,
  ApiOperation,
  ApiProperty,
  ApiResponse,
  ApiSecurity,
  ApiTags,
  type ResponseObject,
  getSchemaPath,
} from '@nestjs/swagger';
import { ERROR_INFO, ErrorCode } from '@app/common';

/** The security scheme names of the document (openapi.ts declares them). */
export const SIGNATURE_SCHEME = 'merchant_signature';
export const METRICS_SCHEME = 'metrics_token';

/** The common authentication parameters of every merchant operation (SPEC 3), for the document only. */
export class SignedParamsDoc {
  @ApiProperty({ example: 'mk_1a2B3c4D5e6F7g8H9i0J1k2L', description: 'The api_key the service issued' })
  api_key: string;

  @ApiProperty({ example: 1763700000, description: 'Unix seconds; within AUTH_TOLERANCE_SECONDS of the server clock' })
  timestamp: number;

  @ApiProperty({ example: 'n0nce12345', description: '8 to 64 of A-Z a-z 0-9 _ -, used once per api_key' })
  nonce: string;

  @ApiProperty({ example: '1b0189d03b7ae2f4117aa47fa8e75863d7aba097de1a28f5da69261aa9c8165f', description: 'Hex HMAC-SHA256 of the canonical string' })
  signature: string;
}

/** The envelope a failure is answered with (SPEC 1), for the document only. */
export class ErrorEnvelopeDoc {
  @ApiProperty({ type: 'integer', example: 40000, description: 'An error code of SPEC 2 (the table in the introduction)' })
  code: number;

  @ApiProperty({ example: 'Invalid parameters' })
  msg: string;

  @ApiProperty({ example: '1763700000', description: 'Unix seconds, as a string' })
  time: string;

  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description: 'null, or details: for 40000 `{"errors": [{"field", "message"}]}`, for a test key\'s 40102 `{"canonical"}`',
  })
  data: Record<string, unknown> | null;
}

/** What any JSON route can answer whatever it does: a malformed, too large or unparsable body, an unexpected error, a dependency down. */
export const REQUEST_ERRORS: readonly ErrorCode[] = [
  ErrorCode.BadRequest,
  ErrorCode.PayloadTooLarge,
  ErrorCode.UnsupportedMediaType,
  ErrorCode.Internal,
  ErrorCode.DependencyUnavailable,
];

/** What every signed merchant operation can answer before it does anything of its own (SPEC 3). */
export const SIGNED_REQUEST_ERRORS: readonly ErrorCode[] = [
  ...REQUEST_ERRORS,
  ErrorCode.AuthMissing,
  ErrorCode.AuthUnknownKey,
  ErrorCode.AuthBadSignature,
  ErrorCode.AuthTimestamp,
  ErrorCode.AuthNonceUsed,
  ErrorCode.MerchantDisabled,
  ErrorCode.RateLimited,
];

/**
 * The error answers of the given codes, as OpenAPI responses by HTTP status: the envelope with
 * `code` limited to those codes, described by their messages.
 */
export function errorResponses(codes: readonly ErrorCode[]): Record<number, ResponseObject> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of [...new Set(codes)].sort((a, b) => a - b)) {
    const { status } = ERROR_INFO[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus.entries()].map(([status, list]) => [
      status,
      {
        description: list.map((code) => `${code}: ${ERROR_INFO[code].msg}`).join('; '),
        ...(list.includes(ErrorCode.RateLimited)
          ? { headers: { 'Retry-After': { description: 'Seconds until a retry can pass', schema: { type: 'integer' } } } }
          : {}),
        content: {
          'application/json': {
            schema: { allOf: [{ $ref: getSchemaPath(ErrorEnvelopeDoc) }, { type: 'object', properties: { code: { type: 'integer', enum: list } } }] },
          },
        },
      },
    ]),
  );
}

/**
 * The error answers of one operation: every code it can give, one response per HTTP status.
 * One call per operation (a second call's status would replace the first's).
 */
export function ApiErrorAnswers(...codes: ErrorCode[]): MethodDecorator {
  return applyDecorators(
    ApiExtraModels(ErrorEnvelopeDoc),
    ...Object.entries(errorResponses(codes)).map(([status, response]) => ApiResponse({ status: Number(status), ...response })),
  );
}

/**
 * The success answer: the envelope with code 1 and, when `data` is given, its schema (else the
 * operation's description says what data holds).
 */
export function ApiEnvelopeOk(data?: Type<unknown>): MethodDecorator {
  const description = 'The envelope {code, msg, time, data}; code 1 on success (the failures are the other answers)';
  if (!data) return ApiOkResponse({ description });
  return applyDecorators(
    ApiExtraModels(data),
    ApiOkResponse({
      description,
      schema: {
        type: 'object',
        required: ['code', 'msg', 'time', 'data'],
        properties: {
          code: { type: 'integer', enum: [1] },
          msg: { type: 'string' },
          time: { type: 'string', description: 'Unix seconds, as a string' },
          data: { $ref: getSchemaPath(data) },
        },
      },
    }),
  );
}

/**
 * A signed merchant operation: its parameters plus the authentication ones, in a JSON or form
 * body (or the query string), and its error answers: SIGNED_REQUEST_ERRORS plus `errors`, the
 * codes the operation itself can give; `data`, a class documenting the success answer's data.
 */
export function MerchantOperation(summary: string, params: Type<unknown>, description = '', errors: ErrorCode[] = [], data?: Type<unknown>): MethodDecorator {
  return applyDecorators(
    ApiTags('merchant'),
    ApiSecurity(SIGNATURE_SCHEME),
    ApiExtraModels(SignedParamsDoc, params),
    ApiOperation({ summary, description: `${description}\n\nSigned request: see "Signing a merchant request" above.`.trim() }),
    ApiBody({ schema: { allOf: [{ $ref: getSchemaPath(params) }, { $ref: getSchemaPath(SignedParamsDoc) }] } }),
    ApiEnvelopeOk(data),
    ApiErrorAnswers(...SIGNED_REQUEST_ERRORS, ...errors),
  );
}

/** An operation anyone may call (region data, probes, channel notifications that carry their own proof): an empty security requirement. */
export function PublicOperation(): MethodDecorator {
  return ApiSecurity({});
}

/**
 * A route payment channels call (`{base_url}/channel/notify/...`): no merchant credential (the
 * channel signs in its own protocol and its adapter verifies it), the answer the channel
 * expects, and the error answers: the request's, 40102, 40400 and `errors`. Path parameters are
 * documented from the route's @Param()s.
 */
export function ChannelNotifyOperation(
  summary: string,
  answer: { contentType: string; example: string } = { contentType: 'text/plain', example: 'success' },
  errors: ErrorCode[] = [],
): MethodDecorator {
  return applyDecorators(
    ApiTags('channel'),
    PublicOperation(),
    ApiOperation({
      summary,
      description:
        "Called by payment channels, not merchants. The parameters are the channel's own, signed in its protocol and verified by its adapter; the order is paid once however often it is reported. Answers what the channel expects on acceptance.",
    }),
    ApiOkResponse({
      description: 'Accepted: the answer the channel expects',
      content: { [answer.contentType]: { schema: { type: 'string', example: answer.example } } },
    }),
    ApiErrorAnswers(...REQUEST_ERRORS, ErrorCode.AuthBadSignature, ErrorCode.OrderNotFound, ...errors),
  );
}
