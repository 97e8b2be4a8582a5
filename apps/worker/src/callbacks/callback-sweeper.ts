import { Injectable, Logger } from '@nestjs/common';
import { QUEUE } from '@app/common';
import { CallbackDeliveryRepository, type DeliveryHead } from '@app/db';
import { JobsAfterCommit, SWEEP_BATCH } from '@app/orders';
import { JobQueue } from '@app/queue';
import { WorkerTuning } from '../worker-tuning';

/** States in which a job still carries its delivery forward. */
const LIVE_STATES = new Set(['active', 'waiting', 'waiting-children', 'delayed', 'prioritized']);

/**
 * Re-adds the job of any due delivery whose job is gone (SPEC 7 Durability): Redis emptied, the
 * add after commit failed, a job that ended while its row stayed pending. Part of the
 * maintenance sweep (one per interval across every worker), a batch of overdue rows at a time.
 */
@Injectable()
export class CallbackSweeper {
  private readonly logger = new Logger('CallbackSweeper');

  constructor(
    private readonly tuning: WorkerTuning,
    private readonly deliveries: CallbackDeliveryRepository,
    private readonly jobs: JobQueue,
    private readonly afterCommit: JobsAfterCommit,
  ) {}

  async sweep(): Promise<{ callbacksRequeued: number }> {
    const queue = this.jobs.queue(QUEUE.callbacks);
    const lost: DeliveryHead[] = [];
    for (const due of await this.deliveries.takeOverdue(this.tuning.sweepGraceMs, SWEEP_BATCH)) {
      const job = await queue.getJob(due.id);
      if (job) {
        const state = await job.getState();
        if (LIVE_STATES.has(state)) continue;
        // A finished job keeps its id and would silently swallow the new add: clear it first.
        try {
          await job.remove();
        } catch (err) {
          this.logger.warn(
            { delivery_id: due.id, job_state: state, err: (err as Error).message },
            'callback job could not be cleared for the sweep to add it again',
          );
          continue;
        }
      }
      lost.push(due);
    }
    await this.afterCommit.addDeliveryJobs(lost);
    if (lost.length > 0) this.logger.log({ deliveries: lost.length }, 're-added the jobs of lost callback deliveries');
    // The deliveries-by-status gauge sums what was appended since this fold.
    await this.deliveries.foldStatusCounts();
    return { callbacksRequeued: lost.length };
  }
}
