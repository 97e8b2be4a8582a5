import { Body, Controller, Get, Headers, Param, Post, Query, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { HtmlPage } from '../http/html-page';
import { checkoutLang } from './checkout-page';
import { type HtmlAnswer, SandboxCheckoutService } from './sandbox-checkout.service';

function send(reply: FastifyReply, answer: HtmlAnswer): void {
  void reply.status(answer.status).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-store').send(answer.html);
}

type Form = Record<string, unknown> | undefined;

/** `/sandbox/checkout/:orderNo`: pages for a person, not envelopes; never framed (SPEC 6). */
// HTML for people, not API: kept out of the OpenAPI document.
@ApiExcludeController()
@Controller('sandbox/checkout')
export class SandboxCheckoutController {
  constructor(private readonly checkout: SandboxCheckoutService) {}

  @Get(':orderNo')
  @HtmlPage()
  async page(
    @Param('orderNo') orderNo: string,
    @Query() query: Form,
    @Headers('accept-language') accept: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    send(reply, await this.checkout.page(orderNo, query?.token, checkoutLang(query?.lang, accept)));
  }

  @Post(':orderNo/pay')
  @HtmlPage()
  async pay(
    @Param('orderNo') orderNo: string,
    @Body() form: Form,
    @Query() query: Form,
    @Headers('accept-language') accept: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    send(reply, await this.checkout.submit(orderNo, form?.token, 'paid', checkoutLang(query?.lang, accept)));
  }

  @Post(':orderNo/fail')
  @HtmlPage()
  async fail(
    @Param('orderNo') orderNo: string,
    @Body() form: Form,
    @Query() query: Form,
    @Headers('accept-language') accept: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    send(reply, await this.checkout.submit(orderNo, form?.token, 'failed', checkoutLang(query?.lang, accept)));
  }
}
