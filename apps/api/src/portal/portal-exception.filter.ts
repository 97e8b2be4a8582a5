import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type {} from '@fastify/view';
import { DomainError, ErrorCode } from '@app/common';
import { loggedPath } from '../http/access-log';
import { isDependencyDown } from '../http/envelope-exception.filter';
import type { MessageKey } from './i18n/en';
import { CsrfRejected, type PortalRequest, SignInRequired } from './portal-request';

interface ErrorPage {
  status: number;
  title: MessageKey;
  body: MessageKey;
}

const NOT_FOUND: ErrorPage = { status: 404, title: 'error.notFoundTitle', body: 'error.notFoundBody' };
const INTERNAL: ErrorPage = { status: 500, title: 'error.internalTitle', body: 'error.internalBody' };

/** Failures of portal pages as pages, never the API's JSON envelope; a missing session as a redirect to sign-in. */
@Catch()
export class PortalExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Portal');

  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<PortalRequest>();
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    if (reply.sent) return;
    if (exception instanceof SignInRequired) {
      const next = request.method === 'GET' && request.url !== '/portal' ? `?next=${encodeURIComponent(request.url)}` : '';
      void reply.redirect(`/portal/login${next}`, 303);
      return;
    }
    const page = this.pageFor(exception);
    if (page === INTERNAL) {
      this.logger.error(
        {
          request_id: request.id,
          method: request.method,
          path: loggedPath(request),
          err: exception instanceof Error ? (exception.stack ?? exception.message) : String(exception),
        },
        'portal request failed',
      );
    }
    void reply.status(page.status).view('error', { title: page.title, body: page.body, requestId: request.id });
  }

  private pageFor(exception: unknown): ErrorPage {
    if (exception instanceof CsrfRejected) return { status: 403, title: 'error.csrfTitle', body: 'error.csrfBody' };
    if (exception instanceof DomainError) {
      if (exception.code === ErrorCode.OrderNotFound || exception.code === ErrorCode.RouteNotFound) return NOT_FOUND;
      if (exception.code === ErrorCode.MerchantDisabled) return { status: 403, title: 'error.disabledTitle', body: 'error.disabledBody' };
      if (exception.code === ErrorCode.BadRequest) return { status: 400, title: 'error.badRequestTitle', body: 'error.badRequestBody' };
    }
    if (exception instanceof HttpException && exception.getStatus() === 404) return NOT_FOUND;
    if (isDependencyDown(exception) || (exception instanceof DomainError && exception.code === ErrorCode.DependencyUnavailable)) {
      return { status: 503, title: 'error.unavailableTitle', body: 'error.unavailableBody' };
    }
    return INTERNAL;
  }
}
