import { EventEmitter } from 'node:events';
import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { JobsOptions, Queue } from 'bullmq';
import { ConnectionReport, JOB_QUEUE, JOB_RETRY, type JobName, type JobPayloads, QUEUE, withTraceContext } from '@app/common';

const ENQUEUE_TIMEOUT_MS = 2000;

/**
 * The one way to put a job on a queue. Payloads carry ids only; the queue each job goes on
 * and its retry policy (JOB_RETRY) come from the contract in libs/common/queues.ts.
 */
@Injectable()
export class JobQueue {
  private readonly queues: Record<string, Queue>;

  constructor(@InjectQueue(QUEUE.orders) orders: Queue, @InjectQueue(QUEUE.callbacks) callbacks: Queue) {
    this.queues = { [QUEUE.orders]: orders, [QUEUE.callbacks]: callbacks };
    // Both queues share one connection's fate: their errors are said once per change, as JSON lines.
    const report = new ConnectionReport('Queue backend');
    for (const queue of Object.values(this.queues)) {
      queue.on('error', (err) => report.failed(err));
      queue.waitUntilReady().then(
        (client: unknown) => {
          report.answered();
          // Later outages and recoveries of the Redis client underneath (not there on the PostgreSQL backend).
          if (client instanceof EventEmitter) report.watch(client);
        },
        () => undefined,
      );
    }
  }

  queue(name: (typeof QUEUE)[keyof typeof QUEUE]): Queue {
    return this.queues[name];
  }

  /** Options every job of that name gets (its retry policy), before the caller's own (jobId, delay). */
  defaults(name: JobName): JobsOptions {
    return { ...JOB_RETRY[name] };
  }

  /**
   * With traces on, the data carries the enqueuer's traceparent (the worker's job span joins its trace).
   * Rejects after ENQUEUE_TIMEOUT_MS rather than waiting for a Redis that is down (its client
   * retries forever): callers enqueue after commit, and the sweeper picks up what this missed.
   */
  async add<N extends JobName>(name: N, payload: JobPayloads[N], options: JobsOptions = {}): Promise<void> {
    await this.withinTimeout(name, this.queues[JOB_QUEUE[name]].add(name, withTraceContext(payload), { ...this.defaults(name), ...options }));
  }

  /** Many jobs of one name in one queue call, under the same timeout as add. */
  async addBulk<N extends JobName>(name: N, jobs: { payload: JobPayloads[N]; jobId: string }[], options: JobsOptions = {}): Promise<void> {
    const defaults = { ...this.defaults(name), ...options };
    await this.withinTimeout(
      name,
      this.queues[JOB_QUEUE[name]].addBulk(jobs.map((job) => ({ name, data: withTraceContext(job.payload), opts: { ...defaults, jobId: job.jobId } }))),
    );
  }

  private async withinTimeout(name: JobName, work: Promise<unknown>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`enqueue ${name} timed out after ${ENQUEUE_TIMEOUT_MS} ms`)), ENQUEUE_TIMEOUT_MS);
    });
    try {
      await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
