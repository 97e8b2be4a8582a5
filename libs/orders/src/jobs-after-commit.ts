import { Injectable, Logger } from '@nestjs/common';
import type { JobName, JobPayloads } from '@app/common';
import { JobQueue } from '@app/queue';

/**
 * Jobs enqueued once a transaction committed. The row is the truth by then: a failed enqueue is
 * logged and left to the maintenance sweep, never thrown at a caller whose change is done.
 */
@Injectable()
export class JobsAfterCommit {
  private readonly logger = new Logger(JobsAfterCommit.name);

  constructor(private readonly queue: JobQueue) {}

  /** A recorded event's first callback delivery, as OrderLifecycle enqueues its own (job id = delivery id). */
  deliver(deliveryId: string): Promise<boolean> {
    return this.enqueue('callback.deliver', { deliveryId }, { jobId: deliveryId });
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
