import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import { Logger } from 'nestjs-pino';
import { HttpAdapterHost, NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { type AppConfig, NEST_START_OPTIONS, localizeEnvelope, negotiateLang } from '@app/common';
import { AppModule } from './app.module';
import { AccessFieldsInterceptor, registerAccessLog } from './http/access-log';
import { EnvelopeExceptionFilter } from './http/envelope-exception.filter';
import { registerHtmlPageHeaders } from './http/html-page';
import { mountOpenApi } from './http/openapi';
import { mountQueueDashboard } from './http/queue-dashboard';
import { mountPortal } from './portal/portal-http';
import { createValidationPipe } from './http/validation';

export const BODY_LIMIT_BYTES = 64 * 1024;

/**
 * TRUST_PROXY for Fastify: a hop count becomes a trust function (the socket's peer and the
 * addresses appended after it, `hops` in all, are proxies), because this Fastify reads a bare
 * number as "trust no one".
 */
function trustProxyOption(trust: AppConfig['trustProxy']): false | string[] | ((address: string, hop: number) => boolean) {
  return typeof trust === 'number' ? (_address, hop) => hop < trust : trust;
}

/** A client's request id is kept when it is 1-64 of [A-Za-z0-9_-] (SPEC 3: nothing that could forge a log line). */
export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(header) ? header : randomUUID();
}

export interface ApiAppOptions {
  /** Nest's own SIGINT/SIGTERM handling; off when a launcher stops several apps and a database itself. */
  shutdownHooks?: boolean;
}

/** The API application, configured and initialised but not listening: main.ts listens, tests inject. */
export async function createApiApp(config: AppConfig, options: ApiAppOptions = {}): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    // The client's X-Request-Id when it is a plain token (so a shop and support quote one id), else a
    // new one; also set on the raw request, where the pino-http middleware reads it.
    genReqId: (raw: IncomingMessage) => ((raw as IncomingMessage & { id?: string }).id = requestIdOf(raw.headers['x-request-id'])),
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: true,
    trustProxy: trustProxyOption(config.trustProxy),
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), adapter, {
    ...NEST_START_OPTIONS,
    // Nest keeps each JSON or form body's bytes as request.rawBody: WeChat Pay signs the exact body it sends.
    rawBody: true,
  });
  // Nest's start-up lines (every route mapped) are kept back until the start passed its checks
  // (app.init below): a refused start says only why, and first.
  app.useLogger(app.get(Logger));
  app.useGlobalFilters(new EnvelopeExceptionFilter(app.get(HttpAdapterHost)));
  app.useGlobalPipes(createValidationPipe());
  app.useGlobalInterceptors(new AccessFieldsInterceptor());
  if (options.shutdownHooks ?? true) app.enableShutdownHooks();
  const fastify = app.getHttpAdapter().getInstance();
  // Fastify parses text/plain by default; the contract accepts JSON and forms only (41500).
  fastify.removeContentTypeParser('text/plain');
  fastify.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  // SPEC 2: a success envelope's msg in the language the request prefers (the filter does the failures').
  fastify.addHook('preSerialization', async (request, _reply, payload) => localizeEnvelope(payload, negotiateLang(request.headers['accept-language'])));
  registerAccessLog(fastify);
  await registerHtmlPageHeaders(app);
  await mountPortal(app, config);
  mountOpenApi(app, config);
  await mountQueueDashboard(app, config);
  await app.init();
  app.flushLogs();
  return app;
}

/** How long a stopping API lets requests in flight finish before it cuts their connections. */
export const API_DRAIN_MS = 10_000;
/** The whole stop: the drain, then closing the pools; past it the process exits 1. */
export const API_STOP_DEADLINE_MS = API_DRAIN_MS + 10_000;

/**
 * The graceful stop: refuses new connections, lets requests in flight answer (for up to
 * `drainMs`, then cuts them), and only then closes the database, Redis and queue connections
 * they were using.
 */
export async function closeApiApp(app: NestFastifyApplication, drainMs = API_DRAIN_MS): Promise<void> {
  const server = app.getHttpServer() as Server;
  const cut = setTimeout(() => server.closeAllConnections(), drainMs);
  try {
    await app.close();
  } finally {
    clearTimeout(cut);
  }
}
