import { Body, Controller, HttpCode, Get, Param, Post, Query, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { CookieSerializeOptions } from '@fastify/cookie';
import { AppConfig, EMAIL_MAX_LENGTH } from '@app/common';
import type { PendingInvitation } from '@app/db';
import { INVITATION_TTL_SECONDS } from '@app/operator';
import { SecretPath } from '../http/access-log';
import { PortalAuthService } from './portal-auth.service';
import { PortalExceptionFilter } from './portal-exception.filter';
import { PortalPageGuard } from './portal-page.guard';
import { CurrentSession, type PortalRequest, PublicPage, formText } from './portal-request';
import { type PortalSession, PortalSessions } from './portal-sessions';
import { verifyAgainstDummy } from './passwords';
import { portalRedirectTarget } from './portal-redirect';
import { SignInAddressLimit } from './sign-in-address-limit';

const INVITATION_TOKEN = /^[A-Za-z0-9_-]{43}$/;
/** Where the invitation's form lives, token-free; its cookie is sent to this path only. */
const INVITATION_PAGE = '/portal/invite';
const INVITATION_COOKIE = 'portal_invite';

/** Sign-in, sign-out and invitations (SPEC 8a). */
// HTML for people, not API: kept out of the OpenAPI document.
@ApiExcludeController()
@Controller('portal')
@UseGuards(PortalPageGuard)
@UseFilters(PortalExceptionFilter)
export class SignInController {
  constructor(
    private readonly auth: PortalAuthService,
    private readonly sessions: PortalSessions,
    private readonly config: AppConfig,
    private readonly addressLimit: SignInAddressLimit,
  ) {}

  @Get('login')
  @PublicPage()
  async loginPage(@Req() request: PortalRequest, @Res() reply: FastifyReply, @Query() query: Record<string, unknown>): Promise<void> {
    if (request.portalSession) return void reply.redirect(portalRedirectTarget(query.next), 303);
    const notice = query.signed_out === '1' ? 'login.signedOut' : query.next ? 'login.required' : null;
    return void reply.view('login', { email: '', error: null, notice, next: portalRedirectTarget(query.next) });
  }

  @Post('login')
  @HttpCode(200)
  @PublicPage()
  async login(@Req() request: PortalRequest, @Res() reply: FastifyReply, @Body() form: unknown): Promise<void> {
    const email = formText(form, 'email').trim();
    const password = formText(form, 'password');
    // Worked out before any session exists: a target that cannot be sent must not leave a session behind.
    const next = portalRedirectTarget(formText(form, 'next'));
    const waitMs = await this.addressLimit.take(request.ip);
    if (waitMs > 0) {
      reply.header('retry-after', String(Math.ceil(waitMs / 1000)));
      return void reply.status(429).view('login', { email, error: 'login.addressThrottled', notice: null, next });
    }
    let result;
    if (email === '' || email.length > EMAIL_MAX_LENGTH) {
      // Not an email anybody could have: refused like a wrong password, after the same work.
      await verifyAgainstDummy(password);
      result = { ok: false as const, reason: 'login.failed' as const };
    } else {
      result = await this.auth.signIn(email, password);
    }
    if (!result.ok) return void reply.status(result.reason === 'login.locked' ? 429 : 401).view('login', { email, error: result.reason, notice: null, next });
    await this.sessions.start(request, reply, result.userId);
    return void reply.redirect(next, 303);
  }

  @Post('logout')
  @HttpCode(200)
  async logout(@CurrentSession() session: PortalSession, @Res() reply: FastifyReply): Promise<void> {
    await this.sessions.end(reply, session);
    return void reply.redirect('/portal/login?signed_out=1', 303);
  }

  /**
   * The link an invitation email carries. Nothing loads at this address: the token goes into a
   * cookie for /portal/invite only and the browser is sent there (SPEC 8a), so the token is in no
   * later address, history entry or Referer; the route's logs show `:token`, never the value.
   */
  @Get('invite/:token')
  @SecretPath('token')
  @PublicPage()
  async openInvitation(@Param('token') token: string, @Res() reply: FastifyReply): Promise<void> {
    reply.header('referrer-policy', 'no-referrer');
    if (INVITATION_TOKEN.test(token)) reply.setCookie(INVITATION_COOKIE, token, this.invitationCookie());
    return void reply.redirect(INVITATION_PAGE, 303);
  }

  @Get('invite')
  @PublicPage()
  async invitationPage(@Req() request: PortalRequest, @Res() reply: FastifyReply): Promise<void> {
    const invitation = await this.pendingInvitation(request);
    if (!invitation) return void reply.status(404).view('invite-invalid', {});
    return void reply.view('invite', { email: invitation.email, passwordReset: invitation.passwordReset, error: null });
  }

  @Post('invite')
  @HttpCode(200)
  @PublicPage()
  async acceptInvitation(@Req() request: PortalRequest, @Res() reply: FastifyReply, @Body() form: unknown): Promise<void> {
    const invitation = await this.pendingInvitation(request);
    if (!invitation) return void reply.status(404).view('invite-invalid', {});
    const token = request.cookies[INVITATION_COOKIE] as string;
    const result = await this.auth.acceptInvitation(token, formText(form, 'password'), formText(form, 'password_repeat'));
    if (!result.ok) {
      if (result.problem === 'invite.invalid') return void reply.status(404).view('invite-invalid', {});
      return void reply.status(400).view('invite', { email: invitation.email, passwordReset: invitation.passwordReset, error: result.problem });
    }
    reply.clearCookie(INVITATION_COOKIE, this.invitationCookie());
    await this.sessions.start(request, reply, result.userId);
    return void reply.redirect('/portal', 303);
  }

  /** The invitation whose token this browser holds (the cookie openInvitation set), if it is still open. */
  private async pendingInvitation(request: PortalRequest): Promise<PendingInvitation | null> {
    const token = request.cookies?.[INVITATION_COOKIE];
    return token && INVITATION_TOKEN.test(token) ? this.auth.findInvitation(token) : null;
  }

  private invitationCookie(): CookieSerializeOptions {
    return { path: INVITATION_PAGE, httpOnly: true, sameSite: 'lax', secure: this.config.publicBaseUrl.startsWith('https:'), maxAge: INVITATION_TTL_SECONDS };
  }
}
