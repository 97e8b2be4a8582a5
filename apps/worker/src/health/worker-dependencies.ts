import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Logger as JsonLogger } from 'nestjs-pino';
import { QUEUE, StartupRefusal } from '@app/common';
import type { JobQueue } from '@app/queue';

/** Thrown when the stop signal came while the worker still waited for its dependencies. */
export class StoppedWhileStarting extends StartupRefusal {
  constructor() {
    super('stopped while waiting for its dependencies, before taking any work');
  }
}

/**
 * Holds the worker's start until Redis (its shared client and the queues' connections) answers.
 * It runs in onModuleInit, after the database's startup checks and before any provider's
 * onApplicationBootstrap, where the work starts: a worker that cannot reach a dependency takes
 * nothing. Meanwhile its logs are JSON lines from here on, not kept back until the app is up.
 */
@Injectable()
export class WorkerDependencies implements OnModuleInit {
  private readonly logger = new Logger('Worker');

  constructor(
    private readonly jsonLogger: JsonLogger,
    private readonly jobs: JobQueue,
    private readonly redis: Redis | null,
    private readonly stop: AbortSignal | undefined,
  ) {}

  async onModuleInit(): Promise<void> {
    // The database checks passed: what was kept back can be said, and what follows is said at once.
    Logger.overrideLogger(this.jsonLogger);
    Logger.flush();
    const waits: Promise<unknown>[] = [...Object.values(QUEUE).map((name) => this.jobs.queue(name).waitUntilReady())];
    const redis = this.redis;
    if (redis && redis.status !== 'ready') waits.push(new Promise((resolve) => redis.once('ready', resolve)));
    const answered = Promise.all(waits);
    const late = setTimeout(() => this.logger.warn('waiting for Redis before taking any work'), 1_000);
    try {
      await this.untilStopped(answered);
    } finally {
      clearTimeout(late);
    }
  }

  private untilStopped<T>(work: Promise<T>): Promise<T> {
    const stop = this.stop;
    if (!stop) return work;
    if (stop.aborted) return Promise.reject(new StoppedWhileStarting());
    return new Promise<T>((resolve, reject) => {
      const onStop = (): void => reject(new StoppedWhileStarting());
      stop.addEventListener('abort', onStop, { once: true });
      work.then(resolve, reject).finally(() => stop.removeEventListener('abort', onStop));
    });
  }
}
