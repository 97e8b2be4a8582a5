// The reply's view() and locals, added by @fastify/view.
import type {} from '@fastify/view';
import { type ExecutionContext, SetMetadata, createParamDecorator } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { Lang, Translate } from './i18n/i18n';
import type { PortalSession } from './portal-sessions';

declare module 'fastify' {
  interface FastifyReply {
    /** Merged into every view's data by @fastify/view (its types leave it out). */
    locals: Record<string, unknown>;
  }
}

/** A request under /portal, after portalRequestHook and PortalPageGuard. */
export interface PortalRequest extends FastifyRequest {
  portalLang: Lang;
  portalT: Translate;
  portalSession: PortalSession | null;
  /** What this request's CSRF token must be bound to (read by @fastify/csrf-protection's getUserInfo). */
  portalCsrfUserInfo: string;
}

/** A page anyone may open (sign-in, invitation): no session needed, CSRF tokens bound to no session. */
export const PUBLIC_PAGE = 'portal:public';
export const PublicPage = (): MethodDecorator => SetMetadata(PUBLIC_PAGE, true);

/** Thrown where a page needs a session and there is none: the filter redirects to sign-in. */
export class SignInRequired extends Error {}

/** Thrown when a state-changing form arrives without a valid CSRF token. */
export class CsrfRejected extends Error {}

/** The signed-in session of a page PortalPageGuard let through. */
export const CurrentSession = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): PortalSession => ctx.switchToHttp().getRequest<PortalRequest>().portalSession as PortalSession,
);

/** The translator of the request's language. */
export const PortalT = createParamDecorator((_data: unknown, ctx: ExecutionContext): Translate => ctx.switchToHttp().getRequest<PortalRequest>().portalT);

/** The request's language. */
export const PortalLangOf = createParamDecorator((_data: unknown, ctx: ExecutionContext): Lang => ctx.switchToHttp().getRequest<PortalRequest>().portalLang);

/** A text field of a form body; '' when absent or repeated. */
export function formText(body: unknown, name: string): string {
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
  return typeof value === 'string' ? value : '';
}
