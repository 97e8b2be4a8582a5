import type { DynamicModule } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { AppConfig } from './config';
import { traceLogFields, tracingOn } from './tracing';

/** Paths pino blanks in every line, whatever logged them: secrets must never reach a log. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  '*.api_secret',
  '*.apiSecret',
  '*.apiSecretEnc',
  '*.secret_key',
  '*.config',
  '*.configEnc',
  '*.masterKey',
  '*.metricsToken',
  '*.password',
];

/** pino-pretty is a developer's convenience the runtime image leaves out: without it, pretty means JSON. */
function prettyAvailable(): boolean {
  try {
    require.resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

/** Structured JSON logs (pretty when LOG_FORMAT=pretty and pino-pretty is installed) with the request id on every request line. */
export function loggingModule(config: AppConfig): DynamicModule {
  return LoggerModule.forRoot({
    pinoHttp: {
      level: config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      // The id Fastify gave the request (set on the raw request by genReqId), so log lines and X-Request-Id agree.
      // The API writes its own access line (create-api-app.ts), which knows the route and the merchant.
      autoLogging: false,
      genReqId: (req) => (req as { id?: string }).id ?? 'unknown',
      // The request's id and method only: a path may carry a secret (an invitation token), and only the
      // access line knows the route that says which part (apps/api/src/http/access-log.ts).
      serializers: { req: (req: { id: string; method: string }) => ({ id: req.id, method: req.method }) },
      // With traces on (startTracing ran before the app was built), every line written inside a span names it.
      mixin: tracingOn() ? traceLogFields : undefined,
      transport: config.logFormat === 'pretty' && prettyAvailable() ? { target: 'pino-pretty', options: { singleLine: true, colorize: true } } : undefined,
    },
  });
}
