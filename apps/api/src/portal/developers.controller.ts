import { Body, Controller, HttpCode, Get, Post, Query, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DevelopersService } from './developers.service';
import { PortalAuthService } from './portal-auth.service';
import { formatShanghai } from './shanghai-time';
import { PortalExceptionFilter } from './portal-exception.filter';
import { PortalPageGuard } from './portal-page.guard';
import { CurrentSession, formText } from './portal-request';
import type { PortalSession } from './portal-sessions';

/** api_key, secret rotation (the new secret shown once, on the answer to the POST only), notify URL, test event, signing examples. */
// HTML for people, not API: kept out of the OpenAPI document.
@ApiExcludeController()
@Controller('portal/developers')
@UseGuards(PortalPageGuard)
@UseFilters(PortalExceptionFilter)
export class DevelopersController {
  constructor(
    private readonly developers: DevelopersService,
    private readonly auth: PortalAuthService,
  ) {}

  @Get()
  async page(@CurrentSession() session: PortalSession, @Query('notice') notice: unknown, @Res() reply: FastifyReply): Promise<void> {
    return void reply.view('developers', {
      ...(await this.developers.view(session.merchantId)),
      notice: notice === 'saved' ? 'notice.notifyUrlSaved' : null,
      error: null,
    });
  }

  /** Asks for the password again (SPEC 8a): the new secret is shown on this answer, so a stolen session must not get it. */
  @Post('rotate-secret')
  @HttpCode(200)
  async rotateSecret(@CurrentSession() session: PortalSession, @Body() form: unknown, @Res() reply: FastifyReply): Promise<void> {
    const refuse = async (error: string, status = 400): Promise<void> =>
      void reply.status(status).view('developers', { ...(await this.developers.view(session.merchantId)), notice: null, error });
    if (formText(form, 'confirm') !== 'yes') return refuse('developers.rotateNeedsConfirm');
    const confirmed = await this.auth.confirmPassword(session.userId, formText(form, 'password'));
    if (confirmed !== 'ok') return confirmed === 'locked' ? refuse('login.locked', 429) : refuse('reauth.wrong');
    const credentials = await this.developers.rotateSecret(session.merchantId, formText(form, 'grace') || '24h');
    if (!credentials) return refuse('developers.graceInvalid');
    const until = credentials.previous_secret_valid_until;
    return void reply.view('secret', {
      apiKey: credentials.api_key,
      apiSecret: credentials.api_secret,
      previousUntil: until ? formatShanghai(new Date(until)) : null,
    });
  }

  @Post('test-event')
  @HttpCode(200)
  async sendTestEvent(@CurrentSession() session: PortalSession, @Res() reply: FastifyReply): Promise<void> {
    const result = await this.developers.sendTestEvent(session.merchantId);
    const view = await this.developers.view(session.merchantId);
    if (result.kind === 'no_notify_url') return void reply.status(400).view('developers', { ...view, notice: null, error: 'developers.testNoNotifyUrl' });
    if (result.kind === 'rate_limited') return void reply.status(429).view('developers', { ...view, notice: null, error: 'developers.testRateLimited' });
    return void reply.view('developers', { ...view, notice: null, error: null, testResult: result.attempt });
  }

  @Post('notify-url')
  @HttpCode(200)
  async setNotifyUrl(@CurrentSession() session: PortalSession, @Body() form: unknown, @Res() reply: FastifyReply): Promise<void> {
    const url = formText(form, 'notify_url').trim();
    if (await this.developers.setNotifyUrl(session.merchantId, url)) return void reply.redirect('/portal/developers?notice=saved', 303);
    const view = await this.developers.view(session.merchantId);
    return void reply.status(400).view('developers', { ...view, notifyUrlInput: url, notice: null, error: 'developers.notifyUrlInvalid' });
  }
}
