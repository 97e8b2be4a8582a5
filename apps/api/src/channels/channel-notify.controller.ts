import { Controller, Get, Header, HttpCode, Param, Post, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ChannelNotifyOperation } from '../http/api-docs';
import { mergeRequestParams } from '../http/request-params';
import { ChannelNotifyService } from './channel-notify.service';

/**
 * `{base_url}/channel/notify/:channelId`, called by payment channels, not merchants: the
 * channel's adapter verifies it, and the answer is the plain text the channel expects.
 * GET as well as POST, because epay gateways notify with a GET.
 */
@Controller('channel/notify')
export class ChannelNotifyController {
  constructor(private readonly notify: ChannelNotifyService) {}

  @Post(':channelId')
  @ChannelNotifyOperation('A payment channel reports a payment (POST)')
  @HttpCode(200)
  @Header('content-type', 'text/plain; charset=utf-8')
  notifyPost(@Param('channelId') channelId: string, @Req() request: FastifyRequest): Promise<string> {
    return this.notify.handle(channelId, mergeRequestParams(request));
  }

  @Get(':channelId')
  @ChannelNotifyOperation('A payment channel reports a payment (GET, as epay gateways do)')
  @Header('content-type', 'text/plain; charset=utf-8')
  notifyGet(@Param('channelId') channelId: string, @Req() request: FastifyRequest): Promise<string> {
    return this.notify.handle(channelId, mergeRequestParams(request));
  }
}
