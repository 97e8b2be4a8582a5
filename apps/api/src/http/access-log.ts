import { type CallHandler, type ExecutionContext, Injectable, Logger, type NestInterceptor } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { PinoLogger } from 'nestjs-pino';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Observable, tap } from 'rxjs';
import { orderTraceIds, tracingOn } from '@app/common';

/** Probes and scrapes are high-volume and carry nothing to audit: no access line. */
const QUIET_PATHS = /^\/(health|ready|metrics)(\?|$)/;

interface SecretPathConfig {
  secretParams?: string[];
}

/**
 * Marks the route's path parameters that are secrets (an invitation token): the route's access
 * line, error lines and metrics show its pattern there (`/portal/invite/:token`), never the value.
 */
export const SecretPath = (...params: string[]): MethodDecorator => RouteConfig({ secretParams: params } satisfies SecretPathConfig);

/**
 * The request's path as a log line may carry it: without the query string (a signature, a nonce,
 * a pay page's token), and with every parameter its route declares secret left as the pattern's
 * `:name`. Decided by the route that matched, not by the look of the text.
 */
export function loggedPath(request: FastifyRequest): string {
  const path = request.url.split('?')[0];
  const secret = (request.routeOptions?.config as SecretPathConfig | undefined)?.secretParams;
  const pattern = request.routeOptions?.url;
  if (!secret?.length || !pattern) return path;
  const params = (request.params ?? {}) as Record<string, string>;
  return pattern.replace(/:([A-Za-z0-9_]+)/g, (whole, name: string) => (secret.includes(name) ? whole : encodeURIComponent(params[name] ?? '')));
}

/** What an operation adds to its access line (the order it was about), set by the operation's answer. */
const ACCESS_FIELDS = Symbol('access fields');
type WithAccessFields = FastifyRequest & { [ACCESS_FIELDS]?: Record<string, string> };

/** The ids an answer names that the runbook says the logs are searched by. */
const SEARCHABLE = ['order_no', 'merchant_order_no', 'refund_no', 'merchant_refund_no', 'event_id', 'delivery_id'] as const;

/** Copies the searchable ids of an answer's data (or an error's) onto its access line. */
export function noteAnswerIds(request: FastifyRequest, data: unknown): void {
  if (!data || typeof data !== 'object') return;
  const fields: Record<string, string> = {};
  for (const key of SEARCHABLE) {
    const value = (data as Record<string, unknown>)[key];
    if (typeof value === 'string' && value !== '') fields[key] = value;
  }
  if (Object.keys(fields).length > 0) (request as WithAccessFields)[ACCESS_FIELDS] = fields;
}

/** For every Nest route: the ids in the envelope's data (createOrder's order_no...) go on the access line. */
@Injectable()
export class AccessFieldsInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    return next.handle().pipe(tap((answer) => noteAnswerIds(request, (answer as { data?: unknown } | null)?.data)));
  }
}

/**
 * With traces on, the trace of the order a request was about (the order_no its answer named, or
 * its route's :orderNo: a pay page, Pay): the access line is written after the request's spans
 * ended, so it names the order's trace rather than an active span.
 */
function orderTraceField(request: FastifyRequest): { trace_id?: string } {
  const orderNo = (request as WithAccessFields)[ACCESS_FIELDS]?.order_no ?? (request.params as { orderNo?: unknown } | undefined)?.orderNo;
  return typeof orderNo === 'string' && /^\d{22}$/.test(orderNo) ? { trace_id: orderTraceIds(orderNo).traceId } : {};
}

/**
 * One JSON access line per request (region answers included): request id, method, the loggable
 * path, the route, status, duration, the merchant once its signature was checked, and the ids
 * the answer named. Never a body, a query string or a secret.
 */
export function registerAccessLog(fastify: FastifyInstance): void {
  // Straight to pino (a child with its context bound once), not through Nest's logger: the region answers
  // are tens of thousands a second, and the Nest layers cost them more than the line itself.
  const root = PinoLogger.root as PinoLogger['logger'] | undefined;
  const pinoAccess = root?.child({ context: 'Access' });
  const nestAccess = new Logger('Access');
  const access = pinoAccess
    ? (fields: object) => pinoAccess.info(fields, 'request completed')
    : (fields: object) => nestAccess.log(fields, 'request completed');
  // A callback hook, not an async one: a promise per request is measurable on the small region answers.
  fastify.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (!QUIET_PATHS.test(request.url) && pinoAccess?.isLevelEnabled('info') !== false) {
      const merchantId = (request as { merchant?: { id: number } }).merchant?.id;
      access({
        request_id: request.id,
        method: request.method,
        path: loggedPath(request),
        route: request.routeOptions?.url ?? null,
        status: reply.statusCode,
        duration_ms: Math.round(reply.elapsedTime),
        ...(merchantId === undefined ? {} : { merchant_id: merchantId }),
        ...(request as WithAccessFields)[ACCESS_FIELDS],
        ...(tracingOn() ? orderTraceField(request) : {}),
      });
    }
    done();
  });
}
