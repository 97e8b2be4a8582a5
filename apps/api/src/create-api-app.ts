import { randomUUID } from 'node:crypto';
import { type LogLevel as NestLogLevel } from '@nestjs/common';
import { HttpAdapterHost, NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { AppConfig, LogLevel } from '@app/common';
import { AppModule } from './app.module';
import { EnvelopeExceptionFilter } from './http/envelope-exception.filter';
import { mountQueueDashboard } from './http/queue-dashboard';
import { createValidationPipe } from './http/validation';

export const BODY_LIMIT_BYTES = 64 * 1024;

const NEST_LEVELS: Record<LogLevel, NestLogLevel[]> = {
  silent: [],
  fatal: ['fatal'],
  error: ['fatal', 'error'],
  warn: ['fatal', 'error', 'warn'],
  info: ['fatal', 'error', 'warn', 'log'],
  debug: ['fatal', 'error', 'warn', 'log', 'debug'],
  trace: ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'],
};

export interface ApiAppOptions {
  /** Nest's own SIGINT/SIGTERM handling; off when a launcher stops several apps and a database itself. */
  shutdownHooks?: boolean;
}

/** The API application, configured and initialised but not listening: main.ts listens, tests inject. */
export async function createApiApp(config: AppConfig, options: ApiAppOptions = {}): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    genReqId: () => randomUUID(),
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: true,
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), adapter, {
    logger: NEST_LEVELS[config.logLevel],
  });
  app.useGlobalFilters(new EnvelopeExceptionFilter(app.get(HttpAdapterHost)));
  app.useGlobalPipes(createValidationPipe());
  if (options.shutdownHooks ?? true) app.enableShutdownHooks();
  const fastify = app.getHttpAdapter().getInstance();
  // Fastify parses text/plain by default; the contract accepts JSON and forms only (41500).
  fastify.removeContentTypeParser('text/plain');
  fastify.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  await mountQueueDashboard(app, config);
  await app.init();
  return app;
}
