import { Controller, Get, Headers, Param, Query, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HtmlPage } from '../http/html-page';
import { payPageLang } from '../pay-pages/pay-page';
import { type CashierAnswer, CashierService } from './cashier.service';

type QueryParams = Record<string, unknown> | undefined;

function send(reply: FastifyReply, answer: CashierAnswer): void {
  void reply.header('cache-control', 'no-store');
  if ('location' in answer) void reply.status(answer.status).header('location', answer.location).send();
  else void reply.status(answer.status).header('content-type', 'text/html; charset=utf-8').send(answer.html);
}

/**
 * `/pay/{order_no}?token=...` (SPEC 6): the cashier, a page for the payer, never framed. Its
 * query carries the order's token and, back from WeChat's OAuth, a one-time `code`: the access
 * line logs the path only. Each answer has its own CSP nonces: only the JSAPI screen runs a script.
 */
@ApiExcludeController()
@Controller('pay')
export class CashierController {
  constructor(private readonly cashier: CashierService) {}

  @Get(':orderNo')
  @HtmlPage({}, { nonces: true })
  async page(
    @Param('orderNo') orderNo: string,
    @Query() query: QueryParams,
    @Headers('accept-language') acceptLanguage: string | undefined,
    @Headers('user-agent') userAgent: string | undefined,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const answer = await this.cashier.visit({
      orderNo,
      query: query ?? {},
      lang: payPageLang(query?.lang, acceptLanguage),
      userAgent,
      ip: request.ip,
      nonces: reply.cspNonce,
    });
    send(reply, answer);
  }

  /** A pay_url from before the cashier: on to the cashier, its Native trade kept. */
  @Get('wechat/:orderNo')
  @HtmlPage()
  async legacyWechat(
    @Param('orderNo') orderNo: string,
    @Query() query: QueryParams,
    @Headers('accept-language') acceptLanguage: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    send(reply, await this.cashier.legacyWechatPage(orderNo, query?.token, payPageLang(query?.lang, acceptLanguage)));
  }
}
