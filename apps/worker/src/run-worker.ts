import { Logger } from '@nestjs/common';
import { type AppConfig, registerRunningBuild, stopOnSignals } from '@app/common';
import { createWorkerApp } from './create-worker-app';
import { CALLBACK_TIMEOUT_MS } from '@app/callbacks';

/** The attempts in flight take up to the callback timeout; then the pools close. */
export const WORKER_STOP_DEADLINE_MS = CALLBACK_TIMEOUT_MS + 15_000;

/**
 * `npm run start:worker`: takes jobs until SIGTERM or SIGINT, then takes no more, lets every
 * attempt in flight finish and record its outcome, closes its connections and exits 0.
 */
export async function runWorker(config: AppConfig): Promise<void> {
  registerRunningBuild();
  const logger = new Logger('Worker');
  const starting = createWorkerApp(config, { shutdownHooks: false });
  stopOnSignals(
    async (signal) => {
      const app = await starting;
      logger.log(`${signal}: taking no more jobs, finishing those in flight`);
      await app.close();
      logger.log('stopped');
    },
    { deadlineMs: WORKER_STOP_DEADLINE_MS, report: (line) => logger.error(line) },
  );
  await starting;
  logger.log(`taking jobs (queue ${config.redisUrl ? 'on Redis' : 'on PostgreSQL'}, prefix ${config.queuePrefix})`);
}
