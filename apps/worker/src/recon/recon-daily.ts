import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import type { Job } from 'bullmq';
import { AppConfig, QUEUE } from '@app/common';
import { ReconRepository } from '@app/db';
import { JobQueue } from '@app/queue';
import { ReconInputError, ReconService, previousShanghaiDate } from '@app/recon';

export const RECON_SCHEDULER_ID = 'recon.daily';

/** The cron pattern of RECON_AT, read in Asia/Shanghai by the scheduler. */
export function reconPattern(at: { hour: number; minute: number }): string {
  return `${at.minute} ${at.hour} * * *`;
}

/**
 * The daily reconciliation (SPEC 6): a BullMQ job scheduler fires 'recon.daily' once a day at
 * RECON_AT Asia/Shanghai, one job whatever the number of workers (Bull Board shows it on the
 * orders queue), and whichever worker takes it reconciles the previous day of every enabled
 * channel. A run is idempotent per bill, so a retried job redoes nothing that is done.
 */
@Injectable()
export class ReconDaily implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('ReconDaily');
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly jobs: JobQueue,
    private readonly recon: ReconService,
    private readonly runs: ReconRepository,
  ) {}

  /** Checked again every minute, as the sweep's scheduler is: a flushed Redis gets it back. */
  async onApplicationBootstrap(): Promise<void> {
    await this.ensureScheduled();
    this.timer = setInterval(() => {
      this.ensureScheduled().catch((err: Error) => this.logger.error(`cannot schedule the daily reconciliation: ${err.message}`));
    }, 60_000);
    this.timer.unref();
  }

  beforeApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async ensureScheduled(): Promise<void> {
    const queue = this.jobs.queue(QUEUE.orders);
    const pattern = reconPattern(this.config.reconAt);
    const existing = await queue.getJobScheduler(RECON_SCHEDULER_ID);
    if (existing?.pattern === pattern && existing.tz === 'Asia/Shanghai') return;
    await queue.upsertJobScheduler(
      RECON_SCHEDULER_ID,
      { pattern, tz: 'Asia/Shanghai' },
      { name: 'recon.daily', data: {}, opts: this.jobs.defaults('recon.daily') },
    );
  }

  /**
   * The job: the day before the one it was scheduled in. A channel whose adapter cannot fetch a
   * bill yet is skipped with a log line; one whose bill cannot be fetched fails the job after the
   * others ran, so BullMQ retries it (the finished ones answer their stored run).
   */
  async run(job: Pick<Job, 'timestamp' | 'delay'>): Promise<{ date: string; runs: { channel_id: number; status: string; counts: Record<string, number> }[] }> {
    const date = previousShanghaiDate(new Date(job.timestamp + (job.delay ?? 0)));
    const results: { channel_id: number; status: string; counts: Record<string, number> }[] = [];
    const failed: number[] = [];
    for (const channel of await this.runs.enabledChannels()) {
      try {
        const report = await this.recon.run(channel.id, date);
        results.push({ channel_id: channel.id, status: report.status, counts: report.counts });
        this.logger.log({ channel_id: channel.id, bill_date: date, status: report.status, difference: report.difference }, 'reconciled');
      } catch (err) {
        if (err instanceof ReconInputError) {
          this.logger.log({ channel_id: channel.id, bill_date: date, reason: err.message }, 'reconciliation skipped');
          continue;
        }
        failed.push(channel.id);
        this.logger.error({ channel_id: channel.id, bill_date: date, err: (err as Error).message }, 'reconciliation failed');
      }
    }
    if (failed.length > 0) throw new Error(`reconciliation of ${date} failed for channel(s) ${failed.join(', ')}`);
    return { date, runs: results };
  }
}
