import { type Type, applyDecorators } from '@nestjs/common';
import { ApiBody, ApiExtraModels, ApiOkResponse, ApiOperation, ApiProperty, ApiTags, getSchemaPath } from '@nestjs/swagger';

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

/** A signed merchant operation: its parameters plus the authentication ones, in a JSON or form body (or the query string). */
export function MerchantOperation(summary: string, params: Type<unknown>, description = ''): MethodDecorator {
  return applyDecorators(
    ApiTags('merchant'),
    ApiExtraModels(SignedParamsDoc, params),
    ApiOperation({ summary, description: `${description}\n\nSigned request: see "Signing a merchant request" above.`.trim() }),
    ApiBody({ schema: { allOf: [{ $ref: getSchemaPath(params) }, { $ref: getSchemaPath(SignedParamsDoc) }] } }),
    ApiOkResponse({ description: 'The envelope {code, msg, time, data}; code 1 on success, else an error code of the table above' }),
  );
}
