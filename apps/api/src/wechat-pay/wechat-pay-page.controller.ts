import { Controller, Get, Headers, Param, Query, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { HtmlPage } from '../http/html-page';
import { WechatPayPageService } from './wechat-pay-page.service';
import { pageLanguage } from './wechat-pay-page';

/** `/pay/wechat/:orderNo`: a page for the payer, not an envelope; never framed, like the sandbox checkout. */
@ApiExcludeController()
@Controller('pay/wechat')
export class WechatPayPageController {
  constructor(private readonly pages: WechatPayPageService) {}

  @Get(':orderNo')
  @HtmlPage()
  async page(
    @Param('orderNo') orderNo: string,
    @Query() query: Record<string, unknown> | undefined,
    @Headers('accept-language') acceptLanguage: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const answer = await this.pages.page(orderNo, query?.token, pageLanguage(query?.lang, acceptLanguage));
    void reply.status(answer.status).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-store').send(answer.html);
  }
}
