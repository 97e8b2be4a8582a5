import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig, QUEUE } from '@app/common';
import { databaseAnswers } from '@app/db';
import { JobQueue } from '@app/queue';
import { QueueWorkers } from '../jobs/queue-workers';
import { HEARTBEAT_INTERVAL_MS, removeHeartbeat, writeHeartbeat } from './heartbeat-file';

const CHECK_TIMEOUT_MS = 2_000;

function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/**
 * Writes the heartbeat file (WORKER_HEALTH_FILE) while this worker can do its work: its consumers
 * run, and PostgreSQL and the queue answer. `main.js --health` only reads the file's age, so the
 * check proves this very process is alive, which a separate process probing the database cannot.
 */
@Injectable()
export class WorkerHeartbeat implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('WorkerHeartbeat');
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private lastProblem: string | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly jobs: JobQueue,
    private readonly consumers: QueueWorkers,
  ) {}

  onApplicationBootstrap(): void {
    // The first beat once every provider has bootstrapped: the consumers start in theirs.
    setImmediate(() => void this.beat());
    this.timer = setInterval(() => void this.beat(), HEARTBEAT_INTERVAL_MS);
    this.timer.unref();
  }

  /** Why this worker cannot do its work right now, or null. */
  async problem(): Promise<string | null> {
    if (!this.consumers.consuming()) return 'the queue consumers are not running';
    try {
      await within(CHECK_TIMEOUT_MS, 'PostgreSQL', databaseAnswers(this.dataSource));
      await within(CHECK_TIMEOUT_MS, 'the queue', this.jobs.queue(QUEUE.orders).getJobCounts('waiting'));
    } catch (err) {
      return (err as Error).message;
    }
    return null;
  }

  private async beat(): Promise<void> {
    const problem = await this.problem();
    if (this.stopped) return;
    if (problem !== this.lastProblem) {
      if (problem) this.logger.warn(`unhealthy, heartbeat paused: ${problem}`);
      else if (this.lastProblem) this.logger.log('healthy again');
    }
    this.lastProblem = problem;
    if (problem) return;
    try {
      writeHeartbeat(this.config.workerHealthFile, Date.now());
    } catch (err) {
      this.logger.warn(`cannot write the heartbeat ${this.config.workerHealthFile}: ${(err as Error).message}`);
    }
  }

  /** A stopping worker takes no more jobs: its healthcheck says so at once. */
  beforeApplicationShutdown(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    removeHeartbeat(this.config.workerHealthFile);
  }
}
