import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply } from 'fastify';
import { DomainError, ErrorCode } from '@app/common';
import { PUBLIC_PAGE, CsrfRejected, type PortalRequest, SignInRequired } from './portal-request';
import { PortalSessions } from './portal-sessions';

/** Asks @fastify/csrf-protection whether the request carries a valid token, without letting it answer. */
function passesCsrf(request: PortalRequest, reply: FastifyReply): Promise<boolean> {
  return new Promise((resolve) => {
    const refusingReply = Object.create(reply, { send: { value: () => resolve(false) } }) as FastifyReply;
    request.server.csrfProtection.call(request.server, request, refusingReply, () => resolve(true));
  });
}

/**
 * Every portal page: resolves the session (a page without one redirects to sign-in), refuses a
 * POST without a valid CSRF token, so no state-changing form can skip the check, and gives the
 * view its token and user.
 */
@Injectable()
export class PortalPageGuard implements CanActivate {
  constructor(
    private readonly sessions: PortalSessions,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<PortalRequest>();
    const reply = context.switchToHttp().getResponse<FastifyReply>();
    const isPublic = this.reflector.get<boolean>(PUBLIC_PAGE, context.getHandler()) ?? false;
    const session = await this.sessions.resolve(request, reply);
    request.portalSession = session;
    if (!session && !isPublic) throw new SignInRequired();
    if (session && !isPublic && session.merchantStatus !== 'active') throw new DomainError(ErrorCode.MerchantDisabled);

    request.portalCsrfUserInfo = PortalSessions.csrfUserInfo(isPublic ? null : session);
    if (request.method !== 'GET' && request.method !== 'HEAD' && !(await passesCsrf(request, reply))) throw new CsrfRejected();
    reply.locals = { ...reply.locals, session, csrfToken: reply.generateCsrf({ userInfo: request.portalCsrfUserInfo }) };
    return true;
  }
}
