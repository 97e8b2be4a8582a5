import { Controller, Get, Header, HttpCode, Param, Post, Req, applyDecorators } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ErrorCode } from '@app/common';
import { ApiErrorAnswers, PublicOperation, REQUEST_ERRORS } from '../http/api-docs';
import { mergeRequestParams } from '../http/request-params';
import { ChannelNotifyService } from './channel-notify.service';

/**
 * `{base_url}/channel/notify/:channelId`, called by payment channels, not merchants: the
 * channel's adapter verifies it, and the answer is the plain text the channel expects.
 * GET as well as POST, because epay gateways notify with a GET.
 */
/** The document of a notification route: the channel signs in its own protocol, which its adapter verifies. */
function ChannelNotifyOperation(method: 'GET' | 'POST'): MethodDecorator {
  return applyDecorators(
    ApiTags('channel'),
    PublicOperation(),
    ApiOperation({
      summary: `A payment channel reports a payment (${method})`,
      description:
        'Called by payment channels, not merchants. The parameters are the channel\'s own, signed in its protocol and verified by its adapter; the order is paid once however often it is reported. Answers the plain text the channel expects (`success` for epay and the sandbox).',
    }),
    ApiParam({ name: 'channelId', description: 'The id of the channel the notification comes from', schema: { type: 'string' } }),
    ApiOkResponse({ description: 'Accepted: the text the channel expects', content: { 'text/plain': { schema: { type: 'string', example: 'success' } } } }),
    ApiErrorAnswers(...REQUEST_ERRORS, ErrorCode.AuthBadSignature, ErrorCode.OrderNotFound),
  );
}

@Controller('channel/notify')
export class ChannelNotifyController {
  constructor(private readonly notify: ChannelNotifyService) {}

  @Post(':channelId')
  @ChannelNotifyOperation('POST')
  @HttpCode(200)
  @Header('content-type', 'text/plain; charset=utf-8')
  notifyPost(@Param('channelId') channelId: string, @Req() request: FastifyRequest): Promise<string> {
    return this.notify.handle(channelId, mergeRequestParams(request));
  }

  @Get(':channelId')
  @ChannelNotifyOperation('GET')
  @Header('content-type', 'text/plain; charset=utf-8')
  notifyGet(@Param('channelId') channelId: string, @Req() request: FastifyRequest): Promise<string> {
    return this.notify.handle(channelId, mergeRequestParams(request));
  }
}
