import { Body, Controller, HttpCode, Get, NotFoundException, Post, Query, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { SecretPath } from '../http/access-log';
import type { FastifyReply } from 'fastify';
import { PortalAuthService } from './portal-auth.service';
import { PortalExceptionFilter } from './portal-exception.filter';
import { PortalPageGuard } from './portal-page.guard';
import { CurrentSession, type PortalRequest, formText } from './portal-request';
import { type PortalSession, PortalSessions } from './portal-sessions';

/** Change password, sign out everywhere; and the portal's 404 page for any other path. */
// HTML for people, not API: kept out of the OpenAPI document.
@ApiExcludeController()
@Controller('portal')
@UseGuards(PortalPageGuard)
@UseFilters(PortalExceptionFilter)
export class AccountController {
  constructor(
    private readonly auth: PortalAuthService,
    private readonly sessions: PortalSessions,
  ) {}

  @Get('account')
  page(@Query('notice') notice: unknown, @Res() reply: FastifyReply): void {
    return void reply.view('account', { notice: notice === 'password' ? 'notice.passwordChanged' : null, error: null, everywhereError: null });
  }

  /** A changed password signs out every other session and rotates this one. */
  @Post('account/password')
  @HttpCode(200)
  async changePassword(
    @Req() request: PortalRequest,
    @CurrentSession() session: PortalSession,
    @Body() form: unknown,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const result = await this.auth.changePassword(
      session.userId,
      formText(form, 'current_password'),
      formText(form, 'new_password'),
      formText(form, 'new_password_repeat'),
    );
    if (!result.ok)
      return void reply.status(result.problem === 'login.locked' ? 429 : 400).view('account', { notice: null, error: result.problem, everywhereError: null });
    await this.sessions.endAllOfUser(session.userId, session);
    await this.sessions.start(request, reply, session.userId);
    return void reply.redirect('/portal/account?notice=password', 303);
  }

  /** Asks for the password again (SPEC 8a): a stolen session must not lock the owner out of every device. */
  @Post('account/sign-out-everywhere')
  @HttpCode(200)
  async signOutEverywhere(@CurrentSession() session: PortalSession, @Body() form: unknown, @Res() reply: FastifyReply): Promise<void> {
    const confirmed = await this.auth.confirmPassword(session.userId, formText(form, 'password'));
    if (confirmed !== 'ok') {
      const everywhereError = confirmed === 'locked' ? 'login.locked' : 'reauth.wrong';
      return void reply.status(confirmed === 'locked' ? 429 : 400).view('account', { notice: null, error: null, everywhereError });
    }
    await this.sessions.endAllOfUser(session.userId);
    await this.sessions.end(reply, session);
    return void reply.redirect('/portal/login?signed_out=1', 303);
  }

  // Anything under /portal no page matches, a mangled invitation link (`/portal/invite/<token>/`) too: logged as `/portal/*`.
  @Get('*')
  @SecretPath('*')
  notFound(): never {
    throw new NotFoundException();
  }
}
