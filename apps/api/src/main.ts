import 'reflect-metadata';
import { apiPort, loadConfigOrExit } from '@app/common/config';
import { helpIfAsked } from '@app/common/process-help';
import { registerRunningBuild } from '@app/common/running-build';
import { exitOnStartupFailure } from '@app/common/startup';
import { stopOnSignals } from '@app/common/stop-on-signals';
import { startTracing, stopTracing } from '@app/common/tracing';

/**
 * `--health`, the container healthcheck: this container's API answers /ready (database, queue,
 * schema) on its PORT within 4 s. It reads PORT alone and loads nothing else: it runs every few seconds.
 */
async function reportHealth(port: number): Promise<never> {
  let problem: string | null;
  try {
    const answer = await fetch(`http://127.0.0.1:${port}/ready`, { signal: AbortSignal.timeout(4_000) });
    problem = answer.ok ? null : `/ready answered ${answer.status}: ${(await answer.text()).slice(0, 300)}`;
  } catch (err) {
    problem = `no answer from /ready on port ${port}: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)}`;
  }
  process.stdout.write(problem ? `api unhealthy: ${problem}\n` : 'api healthy\n');
  process.exit(problem ? 1 : 0);
}

async function main(): Promise<void> {
  helpIfAsked('api');
  if (process.argv.includes('--health')) await reportHealth(apiPort());
  // The app itself only past --health and --help: those load nothing they do not use.
  const { Logger } = await import('@nestjs/common');
  const { API_STOP_DEADLINE_MS, closeApiApp, createApiApp } = await import('./create-api-app.js');
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
