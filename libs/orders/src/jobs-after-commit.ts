import { Injectable, Logger } from '@nestjs/common';
import { type JobName, type JobPayloads } from '@app/common';
import { JobQueue } from '@app/queue';

/**
 * What follows a committed transaction: jobs enqueued. The row is the truth by then: a failure
 * is logged and left to the sweep, never thrown at a caller whose change is done. Callback
 * deliveries are CallbackJobs' (libs/callbacks).
 */
@Injectable()
export class JobsAfterCommit {
  private readonly logger = new Logger(JobsAfterCommit.name);

  constructor(private readonly queue: JobQueue) {}

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
