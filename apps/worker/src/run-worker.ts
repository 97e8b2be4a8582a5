import { Logger } from '@nestjs/common';
import { type AppConfig, describeRedisTarget, queueKeyPrefix, registerRunningBuild, startTracing, stopOnSignals, stopTracing } from '@app/common';
import { createWorkerApp } from './create-worker-app';
import { StoppedWhileStarting } from './health/worker-dependencies';
import { CALLBACK_TIMEOUT_MS } from '@app/callbacks';

/** The attempts in flight take up to the callback timeout; then the pools close. */
export const WORKER_STOP_DEADLINE_MS = CALLBACK_TIMEOUT_MS + 15_000;

/**
 * `npm run start:worker`: takes jobs until SIGTERM or SIGINT, then takes no more, lets every
 * attempt in flight finish and record its outcome, closes its connections and exits 0.
 */
export async function runWorker(config: AppConfig): Promise<void> {
  registerRunningBuild();
  // Before the app is built: its logger adds the trace ids only when traces are on (OTEL_EXPORTER_OTLP_ENDPOINT).
  startTracing('merchant-pay-worker');
  const logger = new Logger('Worker');
  const stop = new AbortController();
  const starting = createWorkerApp(config, { shutdownHooks: false, stop: stop.signal });
  stopOnSignals(
    async (signal) => {
      stop.abort();
      const app = await starting.catch(() => null);
      if (!app) {
        // Still waiting for a dependency: nothing was taken, so nothing is left to finish.
        logger.log(`${signal}: stopped before taking any work`);
        return;
      }
      logger.log(`${signal}: taking no more jobs, finishing those in flight`);
      await app.close();
      await stopTracing();
      logger.log('stopped');
    },
    { deadlineMs: WORKER_STOP_DEADLINE_MS, report: (line) => logger.error(line) },
  );
  const app = await starting.catch((err: unknown) => {
    if (err instanceof StoppedWhileStarting) return null;
    throw err;
  });
  if (!app) return;
  const on = config.queueBackend === 'redis' && config.redis ? `Redis, ${describeRedisTarget(config.redis)}` : 'PostgreSQL';
  logger.log(`taking jobs (queue on ${on}, prefix ${queueKeyPrefix(config.redis, config.queuePrefix)})`);
}
