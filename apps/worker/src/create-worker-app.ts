import { type INestApplicationContext, type LogLevel as NestLogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { AppConfig, LogLevel } from '@app/common';
import { WorkerModule } from './worker.module';
import { WorkerTuning } from './worker-tuning';

const NEST_LEVELS: Record<LogLevel, NestLogLevel[]> = {
  silent: [],
  fatal: ['fatal'],
  error: ['fatal', 'error'],
  warn: ['fatal', 'error', 'warn'],
  info: ['fatal', 'error', 'warn', 'log'],
  debug: ['fatal', 'error', 'warn', 'log', 'debug'],
  trace: ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'],
};

export interface WorkerAppOptions {
  /** Nest's own SIGINT/SIGTERM handling; off when a launcher stops several apps itself. */
  shutdownHooks?: boolean;
  /** Internal timings (tests, benchmark); production keeps the defaults. */
  tuning?: Partial<WorkerTuning>;
}

/**
 * The worker, started: its BullMQ workers take jobs as soon as this resolves. It rejects, and
 * so refuses to start, when a job name of the contract has no handler. Any number may run.
 */
export async function createWorkerApp(config: AppConfig, options: WorkerAppOptions = {}): Promise<INestApplicationContext> {
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config, new WorkerTuning(options.tuning)), {
    logger: NEST_LEVELS[config.logLevel],
  });
  if (options.shutdownHooks ?? true) app.enableShutdownHooks();
  return app;
}
