import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { QUEUE } from '@app/common';
import { JobQueue } from '@app/queue';
import { WorkerTuning } from '../worker-tuning';

export const SWEEP_SCHEDULER_ID = 'maintenance.sweep';

/**
 * Keeps the repeatable 'maintenance.sweep' job (a BullMQ job scheduler: one job per interval,
 * whatever the number of worker copies) in place. Every copy re-checks it each interval, so a
 * flushed Redis gets its scheduler back and the sweep can recover the lost deliveries.
 */
@Injectable()
export class MaintenanceScheduler implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('MaintenanceScheduler');
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly tuning: WorkerTuning,
    private readonly jobs: JobQueue,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.ensureScheduled();
    this.timer = setInterval(() => {
      this.ensureScheduled().catch((err: Error) => this.logger.error(`cannot schedule the sweep: ${err.message}`));
    }, this.tuning.sweepIntervalMs);
    this.timer.unref();
  }

  async ensureScheduled(): Promise<void> {
    const queue = this.jobs.queue(QUEUE.orders);
    const existing = await queue.getJobScheduler(SWEEP_SCHEDULER_ID);
    // In place, and its next run not overdue by more than two intervals (a scheduler whose next job was lost is put back).
    const overdue = existing?.next !== undefined && existing.next < Date.now() - 2 * this.tuning.sweepIntervalMs;
    if (existing && existing.every === this.tuning.sweepIntervalMs && !overdue) return;
    await queue.upsertJobScheduler(
      SWEEP_SCHEDULER_ID,
      { every: this.tuning.sweepIntervalMs },
      { name: 'maintenance.sweep', data: {}, opts: this.jobs.defaults('maintenance.sweep') },
    );
  }

  beforeApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
