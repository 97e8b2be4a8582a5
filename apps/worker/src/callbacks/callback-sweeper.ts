import { Injectable, Logger } from '@nestjs/common';
import { AppConfig, QUEUE, callbackAttemptsLimit } from '@app/common';
import { CallbackDeliveryRepository } from '@app/db';
import { SWEEP_BATCH } from '@app/orders';
import { JobQueue } from '@app/queue';
import { WorkerTuning } from '../worker-tuning';

/** States in which a job still carries its delivery forward. */
const LIVE_STATES = new Set(['active', 'waiting', 'waiting-children', 'delayed', 'prioritized']);

/**
 * Re-enqueues pending deliveries whose job the queue lost: Redis flushed, the enqueue after
 * commit failed, a worker died mid-attempt and its job ended failed. Idempotent: the job id is
 * the delivery id, and a live job is left alone.
 */
@Injectable()
export class CallbackSweeper {
  private readonly logger = new Logger('CallbackSweeper');

  constructor(
    private readonly config: AppConfig,
    private readonly tuning: WorkerTuning,
    private readonly deliveries: CallbackDeliveryRepository,
    private readonly jobs: JobQueue,
  ) {}

  async sweep(): Promise<{ requeued: number }> {
    const queue = this.jobs.queue(QUEUE.callbacks);
    const maxAttempts = callbackAttemptsLimit(this.config.callbackRetryScheduleMs);
    let requeued = 0;
    for (const due of await this.deliveries.findOverdue(this.tuning.sweepGraceMs, SWEEP_BATCH)) {
      const job = await queue.getJob(due.id);
      if (job) {
        const state = await job.getState();
        if (LIVE_STATES.has(state)) continue;
        // A finished job keeps its id and would silently swallow the new add: clear it first.
        try {
          await job.remove();
        } catch (err) {
          this.logger.warn(`delivery ${due.id}: could not clear its ${state} job: ${(err as Error).message}`);
          continue;
        }
      }
      // Restart the grace period first: if the add fails, the next sweep still sees the delivery.
      await this.deliveries.touch([due.id]);
      await this.jobs.add('callback.deliver', { deliveryId: due.id }, { jobId: due.id, attempts: Math.max(1, maxAttempts - due.attemptsMade) });
      requeued++;
    }
    if (requeued > 0) this.logger.log(`re-enqueued ${requeued} lost callback deliveries`);
    return { requeued };
  }
}
