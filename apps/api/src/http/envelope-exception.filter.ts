import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { QueryRunnerAlreadyReleasedError, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
import { DomainError, ERROR_INFO, ErrorCode, JSON_CONTENT_TYPE, apiMessage, envelope, negotiateLang } from '@app/common';

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** Fastify's own errors (body parsing, limits) by their code. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: ErrorCode.PayloadTooLarge,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ErrorCode.UnsupportedMediaType,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ErrorCode.BadRequest,
  FST_ERR_CTP_EMPTY_JSON_BODY: ErrorCode.BadRequest,
  FST_ERR_CTP_INVALID_JSON_BODY: ErrorCode.BadRequest,
};

/** HTTP statuses of framework exceptions that mean the same as one of our codes. */
const STATUS_CODES: Record<number, ErrorCode> = {
  400: ErrorCode.BadRequest,
  404: ErrorCode.RouteNotFound,
  405: ErrorCode.MethodNotAllowed,
  413: ErrorCode.PayloadTooLarge,
  415: ErrorCode.UnsupportedMediaType,
  429: ErrorCode.RateLimited,
};

/**
 * Connection-level failures of PostgreSQL or Redis, and the transient conflicts PostgreSQL asks
 * to retry (a deadlock it broke, a serialization failure): the client should retry later (50300).
 */
export function isDependencyDown(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  // TypeORM, when PostgreSQL dropped the connection under a transaction it was running.
  if (err instanceof QueryRunnerProviderAlreadyReleasedError || err instanceof QueryRunnerAlreadyReleasedError) return true;
  const code = (err as { code?: string }).code ?? '';
  if (
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', '57P01', '57P03', '53300', '08006', '08001', '08003', '40P01', '40001'].includes(code)
  ) {
    return true;
  }
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Connection is closed|MaxRetriesPerRequest|Stream isn't writeable|the database system is (starting|shutting) up/i.test(
    err.message,
  );
}

/**
 * The one place an error becomes a response: every failure, framework ones included, leaves
 * as the envelope with the code of SPEC 2. Anything unforeseen is logged with the request id
 * and answered 50000 with a generic message.
 */
@Catch()
export class EnvelopeExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const request = ctx.getRequest<FastifyRequest>();
    const reply = ctx.getResponse<FastifyReply>();
    const error = this.toDomainError(exception, request);

    if (error.code === ErrorCode.Internal || error.code === ErrorCode.DependencyUnavailable) {
      const detail = exception instanceof Error ? (exception.stack ?? exception.message) : String(exception);
      this.logger.error({ request_id: request.id, method: request.method, route: request.routeOptions?.url ?? request.url, err: detail }, 'request failed');
    }
    if (reply.sent) return;
    const { status } = ERROR_INFO[error.code];
    reply.status(status).header('content-type', JSON_CONTENT_TYPE);
    for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
    if (error.code === ErrorCode.MethodNotAllowed) reply.header('allow', this.allowedMethods(request).join(', '));
    // SPEC 2: msg in the language the request prefers; code and data the same in every language.
    void reply.send(JSON.stringify(envelope(error.code, error.msgIn(negotiateLang(request.headers['accept-language'])), error.data)));
  }

  private toDomainError(exception: unknown, request: FastifyRequest): DomainError {
    if (exception instanceof DomainError) return exception;
    const fastifyCode = (exception as { code?: unknown } | null)?.code;
    if (typeof fastifyCode === 'string' && fastifyCode in FASTIFY_CODES) {
      const code = FASTIFY_CODES[fastifyCode];
      return new DomainError(code, code === ErrorCode.BadRequest ? apiMessage('request.malformedBody') : undefined);
    }
    if (exception instanceof SyntaxError) return new DomainError(ErrorCode.BadRequest, apiMessage('request.malformedJson'));
    if (isDependencyDown(exception)) return new DomainError(ErrorCode.DependencyUnavailable);

    const status = exception instanceof HttpException ? exception.getStatus() : (exception as { statusCode?: unknown } | null)?.statusCode;
    if (typeof status === 'number' && status in STATUS_CODES) {
      let code = STATUS_CODES[status];
      if (code === ErrorCode.RouteNotFound && this.allowedMethods(request).length > 0) code = ErrorCode.MethodNotAllowed;
      // Framework 400s (a prototype-polluting key, a bad form body) keep a safe message of their own.
      const json = String(request.headers['content-type'] ?? '').includes('json');
      const message = code === ErrorCode.BadRequest ? apiMessage(json ? 'request.malformedJson' : 'request.malformed') : undefined;
      return new DomainError(code, message);
    }
    return new DomainError(ErrorCode.Internal);
  }

  /** The methods some route answers at this path: non-empty means the path exists and the method is wrong. */
  private allowedMethods(request: FastifyRequest): string[] {
    const instance = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    const url = request.url.split('?')[0];
    return HTTP_METHODS.filter((method) => method !== request.method && instance.findRoute({ method, url }) !== null);
  }
}
