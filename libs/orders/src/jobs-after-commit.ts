import { Injectable, Logger } from '@nestjs/common';
import { AppConfig, type JobName, type JobPayloads, parseNotifyUrl } from '@app/common';
import { DeliveryPolicy } from '@app/callbacks';
import { CallbackDeliveryRepository, type DeliveryHead } from '@app/db';
import { JobQueue } from '@app/queue';

/**
 * Errors that are no attempt (PostgreSQL down before the claim, a lost job lock) count as job
 * attempts too: a few spare ones, so the DeliveryPolicy, not BullMQ, ends a delivery. Past them
 * the job fails while its row is pending, and the sweep adds it again.
 */
const SPARE_JOB_ATTEMPTS = 5;

/**
 * What follows a committed transaction: jobs enqueued. The row is the truth by then: a failure
 * is logged and left to the sweep, never thrown at a caller whose change is done.
 */
@Injectable()
export class JobsAfterCommit {
  private readonly logger = new Logger(JobsAfterCommit.name);
  private readonly attempts: number;

  constructor(
    config: AppConfig,
    private readonly queue: JobQueue,
    private readonly deliveries: CallbackDeliveryRepository,
  ) {
    this.attempts = new DeliveryPolicy(config.callbackRetryScheduleMs).maxAttempts + SPARE_JOB_ATTEMPTS;
  }

  /**
   * The one funnel for "these delivery rows are committed": each that is first in its order
   * (SPEC 7 Order) gets its 'callback.deliver' job, job id = delivery id. A later event's
   * delivery gets none yet: the end of the one before adds it (both sides look after their own
   * commit, so neither misses the other). A failure is left to the sweep.
   */
  async deliver(deliveryIds: string | string[]): Promise<boolean> {
    const ids = Array.isArray(deliveryIds) ? deliveryIds : [deliveryIds];
    if (ids.length === 0) return true;
    try {
      await this.addDeliveryJobs(await this.deliveries.heads(ids));
      return true;
    } catch (err) {
      this.logger.warn(`callback jobs for ${ids.length} deliveries not added, the sweep adds them: ${(err as Error).message}`);
      return false;
    }
  }

  /**
   * deliver() for deliveries whose heads the transaction returned (RecordedEvent.head): no read
   * after the commit. Logged and left to the sweep on failure, like deliver().
   */
  async deliverHeads(heads: DeliveryHead[]): Promise<boolean> {
    try {
      await this.addDeliveryJobs(heads);
      return true;
    } catch (err) {
      this.logger.warn(`callback jobs for ${heads.length} deliveries not added, the sweep adds them: ${(err as Error).message}`);
      return false;
    }
  }

  /** Adds a job per delivery (a live job of the same id is left alone), keyed by the one URL parser's destination. */
  async addDeliveryJobs(heads: DeliveryHead[]): Promise<void> {
    if (heads.length === 0) return;
    await this.queue.addBulk(
      'callback.deliver',
      heads.map((h) => ({
        jobId: h.id,
        payload: { deliveryId: h.id, merchantId: h.merchantId, destination: parseNotifyUrl(h.notifyUrl)?.destination ?? null },
      })),
      { attempts: this.attempts },
    );
  }

  /** A job for a committed row; a failure is logged and left to the sweep (false), never thrown. */
  async enqueue<N extends JobName>(name: N, payload: JobPayloads[N], options: { jobId: string; delay?: number }): Promise<boolean> {
    try {
      await this.queue.add(name, payload, options);
      return true;
    } catch (err) {
      this.logger.error({ job: name, job_id: options.jobId, err: (err as Error).message }, 'enqueue failed, the sweep will retry');
      return false;
    }
  }

  /**
   * The sweeps' one shape: a new job for each row stuck `stuckSeconds` (its job may be lost),
   * under the row's job id plus a suffix fresh per window of that length, since BullMQ keeps
   * a job that failed for good under its old id. Answers how many were queued.
   */
  async requeueStuck<N extends JobName>(
    name: N,
    stuck: { ids: string[]; stuckSeconds: number },
    job: (id: string) => { payload: JobPayloads[N]; jobId: string },
  ): Promise<number> {
    const window = Math.floor(Date.now() / (stuck.stuckSeconds * 1000));
    let queued = 0;
    for (const id of stuck.ids) {
      const { payload, jobId } = job(id);
      if (await this.enqueue(name, payload, { jobId: `${jobId}-sweep-${window}` })) queued++;
    }
    return queued;
  }
}
