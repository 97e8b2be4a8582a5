import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger } from 'nestjs-pino';
import { type AppConfig, NEST_START_OPTIONS } from '@app/common';
import { WorkerModule } from './worker.module';
import { WorkerTuning } from './worker-tuning';

export interface WorkerAppOptions {
  /** Nest's own SIGINT/SIGTERM handling; off when a launcher stops several apps itself. */
  shutdownHooks?: boolean;
  /** Internal timings (tests, benchmark); production keeps the defaults. */
  tuning?: Partial<WorkerTuning>;
  /** Aborted on a stop signal: a start still waiting for its dependencies rejects with StoppedWhileStarting. */
  stop?: AbortSignal;
}

/**
 * The worker, started: its BullMQ workers take jobs as soon as this resolves, never before the
 * database's checks passed and Redis answered (it waits for Redis). It rejects, and so refuses to
 * start, when a job name of the contract has no handler. Any number may run.
 */
export async function createWorkerApp(config: AppConfig, options: WorkerAppOptions = {}): Promise<INestApplicationContext> {
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config, new WorkerTuning(options.tuning), options.stop), NEST_START_OPTIONS);
  app.useLogger(app.get(Logger));
  app.flushLogs();
  if (options.shutdownHooks ?? true) app.enableShutdownHooks();
  return app;
}
