import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { QueryRunnerAlreadyReleasedError, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
import { DomainError, ERROR_INFO, ErrorCode, JSON_CONTENT_TYPE, OutageReport, apiMessage, envelope, negotiateLang } from '@app/common';
import { loggedPath, noteAnswerIds } from './access-log';

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
 * Connection-level failures of PostgreSQL or Redis, a statement PostgreSQL cancelled at
 * statement_timeout, and the transient conflicts PostgreSQL asks to retry (a deadlock it broke, a
 * serialization failure): the client should retry later (50300).
 */
export function isDependencyDown(err: unknown): boolean {
  // Not `instanceof Error`: a socket's error may come from another realm (node:net under jest's VM) and is still one.
  if (typeof err !== 'object' || err === null || typeof (err as { message?: unknown }).message !== 'string') return false;
  // TypeORM, when PostgreSQL dropped the connection under a transaction it was running.
  if (err instanceof QueryRunnerProviderAlreadyReleasedError || err instanceof QueryRunnerAlreadyReleasedError) return true;
  // The code where TypeORM (driverError) or a wrapper (cause) keeps it too.
  const nested = err as { code?: string; driverError?: { code?: string }; cause?: { code?: string } };
  const codes = [nested.code, nested.driverError?.code, nested.cause?.code];
  if (
    codes.some(
      (code) =>
        code !== undefined &&
        [
          'ECONNREFUSED',
          'ECONNRESET',
          'ETIMEDOUT',
          'EPIPE',
          'ENOTFOUND',
          '57P01',
          '57P03',
          '57014',
          '53300',
          '08006',
          '08001',
          '08003',
          '40P01',
          '40001',
        ].includes(code),
    )
  ) {
    return true;
  }
  const errors = (err as { errors?: unknown }).errors;
  if (Array.isArray(errors) && errors.some(isDependencyDown)) return true;
  // Redis answering that it cannot serve now (its reply's first word): a Cluster with a slot not served, a
  // restart still loading its data, a replica cut from its primary, a failover's demoted primary, a
  // script running long, or a full memory under noeviction (RUNBOOK "Redis down"). Retry later, not a fault of ours.
  if (/^(CLUSTERDOWN|LOADING|MASTERDOWN|TRYAGAIN|NOREPLICAS|READONLY|BUSY|OOM) /.test((err as Error).message)) return true;
  // A Redis Cluster client that has no node to send to (all down, or none whose certificate verifies) says so in its own words.
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Connection is closed|MaxRetriesPerRequest|Stream isn't writeable|Cluster isn't ready|Failed to refresh slots cache|None of startup nodes is available|the database system is (starting|shutting) up|connect (ECONNREFUSED|ETIMEDOUT|EHOSTUNREACH)|is not queryable/i.test(
    (err as Error).message,
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
  private readonly outages = new OutageReport('Errors');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const request = ctx.getRequest<FastifyRequest>();
    const reply = ctx.getResponse<FastifyReply>();
    const error = this.toDomainError(exception, request);

    if (error.code === ErrorCode.Internal) {
      const detail = exception instanceof Error ? (exception.stack ?? exception.message) : String(exception);
      this.logger.error(
        { request_id: request.id, method: request.method, route: request.routeOptions?.url ?? loggedPath(request), err: detail },
        'request failed',
      );
    } else if (error.code === ErrorCode.DependencyUnavailable) {
      // An outage fails every request alike: one line when it starts (or its cause changes), not a stack per request.
      this.outages.failed(exception);
    }
    noteAnswerIds(request, error.data);
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
