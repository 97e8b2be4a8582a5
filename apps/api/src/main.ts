import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { exitOnStartupFailure, helpIfAsked, loadConfigOrExit, registerRunningBuild, startTracing, stopOnSignals, stopTracing } from '@app/common';
import { API_STOP_DEADLINE_MS, closeApiApp, createApiApp } from './create-api-app';

async function main(): Promise<void> {
  helpIfAsked('api');
  registerRunningBuild();
  const config = loadConfigOrExit(process.env, 'Api');
  // Before the app is built: its logger adds the trace ids only when traces are on (OTEL_EXPORTER_OTLP_ENDPOINT).
  startTracing('merchant-pay-api');
  const logger = new Logger('Api');
  const app = await createApiApp(config, { shutdownHooks: false });
  stopOnSignals(
    async (signal) => {
      logger.log(`${signal}: refusing new connections, finishing the requests in flight`);
      await closeApiApp(app);
      await stopTracing();
      logger.log('stopped');
    },
    { deadlineMs: API_STOP_DEADLINE_MS, report: (line) => logger.error(line) },
  );
  await app.listen({ port: config.port, host: '0.0.0.0' });
  logger.log(`listening on port ${config.port}, merchant API under ${config.apiPrefix}`);
}

main().catch((err: unknown) => exitOnStartupFailure('Api', err));
