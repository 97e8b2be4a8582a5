import { Controller, Get, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ChannelNotifyOperation } from '../http/api-docs';
import { rawBodyOf } from '../http/raw-body';
import { ChannelNotifyService, type NotificationArrival } from './channel-notify.service';

/**
 * `{base_url}/channel/notify/:channelId`, called by payment channels, not merchants: the
 * channel's adapter verifies it, and the answer is what the channel expects (a text, or
 * WeChat Pay's 204). GET as well as POST, because epay gateways notify with a GET.
 */
@Controller('channel/notify')
export class ChannelNotifyController {
  constructor(private readonly notify: ChannelNotifyService) {}

  @Post(':channelId')
  @ChannelNotifyOperation('A payment channel reports a payment (POST)')
  notifyPost(@Param('channelId') channelId: string, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    return this.answer(channelId, request, reply);
  }

  @Get(':channelId')
  @ChannelNotifyOperation('A payment channel reports a payment (GET, as epay gateways do)')
  notifyGet(@Param('channelId') channelId: string, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    return this.answer(channelId, request, reply);
  }

  private async answer(channelId: string, request: FastifyRequest, reply: FastifyReply): Promise<string> {
    const arrival: NotificationArrival = { request, context: { headers: request.headers, rawBody: rawBodyOf(request) } };
    const answer = await this.notify.handle(channelId, arrival);
    reply.status(answer.status);
    if (answer.contentType) reply.header('content-type', answer.contentType);
    return answer.body;
  }
}
