import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { CALLBACK_DUE_CHANNEL, type JobName, type JobPayloads } from '@app/common';
import { JobQueue } from '@app/queue';

/**
 * What follows a committed transaction: jobs enqueued, and the callback dispatchers woken. The
 * row is the truth by then: a failure is logged and left to the sweep (jobs) or to the
 * dispatchers' own polling (deliveries), never thrown at a caller whose change is done.
 */
@Injectable()
export class JobsAfterCommit {
  private readonly logger = new Logger(JobsAfterCommit.name);

  constructor(
    private readonly queue: JobQueue,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /**
   * The one funnel for "these delivery rows are ready": every worker's dispatcher hears it
   * (PostgreSQL NOTIFY) and claims them at once. The rows are the queue, so nothing is lost
   * if the wake-up is: the dispatchers also poll every second.
   */
  async deliver(deliveryIds: string | string[]): Promise<boolean> {
    const ids = Array.isArray(deliveryIds) ? deliveryIds : [deliveryIds];
    if (ids.length === 0) return true;
    try {
      await this.dataSource.query(`SELECT pg_notify($1, '')`, [CALLBACK_DUE_CHANNEL]);
      return true;
    } catch (err) {
      this.logger.warn(`wake-up for ${ids.length} callback deliveries failed, the dispatchers' polling sends them: ${(err as Error).message}`);
      return false;
    }
  }

  async enqueue<N extends JobName>(name: N, payload: JobPayloads[N], options: { jobId: string; delay?: number }): Promise<boolean> {
    try {
      await this.queue.add(name, payload, options);
      return true;
    } catch (err) {
      this.logger.error(`enqueue ${name} ${options.jobId} failed, the sweep will retry: ${(err as Error).message}`);
      return false;
    }
  }
}
