import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { type Job, UnrecoverableError, Worker, type WorkerOptions } from 'bullmq';
import { Counter } from 'prom-client';
import { AppConfig, ConnectionReport, type JobName, QUEUE, jobSpan } from '@app/common';
import { callbackBackoff } from '@app/callbacks';
import { JobQueue } from '@app/queue';
import { type CallbackJob, CallbackDeliveryProcessor } from '../callbacks/callback-delivery.processor';
import { CallbackSweeper } from '../callbacks/callback-sweeper';
import { WorkerMetrics } from '../callbacks/worker-metrics';
import { MoneyOutProcessor } from '../money-out/money-out.processor';
import { OrdersProcessor } from '../orders/orders.processor';
import { ReconDaily } from '../recon/recon-daily';
import { RetentionSweep } from '../retention/retention-sweep';
import { WorkerTuning } from '../worker-tuning';
import { type JobHandler, type JobHandlers, assertEveryJobHandled } from './job-handlers';

/**
 * One BullMQ Worker per queue, dispatching by job name to the handler map. Built here rather
 * than with @Processor so the handler map is checked before any job is taken, and the
 * concurrency and the callbacks' backoff (the retry schedule) come from the validated config.
 */
@Injectable()
export class QueueWorkers implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('QueueWorkers');
  private readonly workers: Worker[] = [];
  private stopping = false;
  private readonly handlerMap: JobHandlers;
  private readonly failures: Counter<'queue' | 'job_name' | 'final'>;

  constructor(
    private readonly config: AppConfig,
    private readonly tuning: WorkerTuning,
    private readonly jobs: JobQueue,
    private readonly orders: OrdersProcessor,
    private readonly moneyOut: MoneyOutProcessor,
    private readonly reconDaily: ReconDaily,
    private readonly callbacks: CallbackDeliveryProcessor,
    private readonly callbackSweeper: CallbackSweeper,
    private readonly retention: RetentionSweep,
    metrics: WorkerMetrics,
  ) {
    this.failures = new Counter({
      name: 'merchant_pay_jobs_failed_total',
      help: 'Failed runs of jobs on every queue, by queue, job_name and final (true: BullMQ will not run it again); callback attempts to be retried are counted by the callback metrics instead',
      labelNames: ['queue', 'job_name', 'final'] as const,
      registers: [metrics.registry],
    });
    // Checked while the app is being built: a job name without a handler stops the start-up.
    const handlers: Partial<JobHandlers> = this.handlers();
    assertEveryJobHandled(handlers);
    this.handlerMap = handlers;
  }

  handlers(): JobHandlers {
    return {
      'callback.deliver': (_payload, job) => this.callbacks.deliver(job as CallbackJob, job.token),
      'order.confirm': (payload) => this.orders.confirm(payload),
      'order.close': (payload) => this.orders.settleClose(payload),
      // The safety net never fails as a whole: each part that throws is logged and the others still
      // run, and the job ends done, so its scheduler goes on (a failed run once left no next one).
      'maintenance.sweep': async () => {
        const [orders, callbacks] = await Promise.allSettled([this.orders.sweep(), this.callbackSweeper.sweep()]);
        const retention = await this.retention.sweep().then(
          (value) => ({ status: 'fulfilled' as const, value }),
          (reason: unknown) => ({ status: 'rejected' as const, reason }),
        );
        const parts = { orders, callbacks, retention };
        for (const [part, result] of Object.entries(parts)) {
          if (result.status === 'rejected')
            this.logger.error(
              { part, err: (result.reason as Error)?.message ?? String(result.reason) },
              'maintenance sweep part failed; the next sweep tries again',
            );
        }
        return {
          ...(orders.status === 'fulfilled' ? orders.value : {}),
          ...(callbacks.status === 'fulfilled' ? callbacks.value : {}),
          retention: retention.status === 'fulfilled' ? retention.value : null,
        };
      },
      'order.payout': (payload) => this.moneyOut.payout(payload),
      'refund.process': (payload) => this.moneyOut.refund(payload),
      'recon.daily': (_payload, job) => this.reconDaily.run(job),
    };
  }

  onApplicationBootstrap(): void {
    const handlers = this.handlerMap;
    const dispatch = async (job: Job): Promise<unknown> => {
      const handler = handlers[job.name as JobName] as JobHandler<JobName> | undefined;
      if (!handler) throw new UnrecoverableError(`no handler for job '${job.name}'`);
      // In the trace of whoever enqueued it (the traceparent in its data) when traces are on.
      return jobSpan(job.queueName, job.name, job.data, job.id, () => handler(job.data, job));
    };
    const perQueue: Record<string, Partial<WorkerOptions>> = {
      [QUEUE.orders]: { concurrency: this.tuning.ordersConcurrency },
      [QUEUE.callbacks]: {
        concurrency: this.tuning.callbackConcurrency,
        settings: { backoffStrategy: callbackBackoff(this.config.callbackRetryScheduleMs) },
      },
    };
    for (const name of Object.values(QUEUE)) {
      const queue = this.jobs.queue(name);
      const worker = new Worker(name, dispatch, {
        connection: queue.opts.connection,
        prefix: queue.opts.prefix,
        lockDuration: this.tuning.lockDurationMs,
        // A job whose worker died (its lock expired) goes back to the wait list within this: the lease of a callback attempt.
        stalledInterval: this.tuning.lockDurationMs,
        // Run below, once every check passed: constructing a Worker must not take a job.
        autorun: false,
        ...perQueue[name],
      } as WorkerOptions);
      const report = new ConnectionReport(`${name} worker`);
      worker.on('error', (err) => {
        // Once stopping, BullMQ's PostgreSQL backend can still report a LISTEN connection it
        // opened during the close being cut when the embedded database stops after us: the stop, not a fault.
        if (this.stopping) this.logger.debug({ queue: name, err: err.message }, 'worker error while stopping');
        else report.failed(err);
      });
      worker.on('ready', () => report.answered());
      worker.on('failed', (job, err) => this.logFailure(name, job, err));
      this.workers.push(worker);
    }
    // WorkerDependencies (onModuleInit) kept the start back until the database's checks passed and Redis answered.
    for (const worker of this.workers)
      worker.run().catch((err: Error) => this.logger.error({ queue: worker.name, err: err.message }, 'worker stopped taking jobs'));
  }

  /**
   * One JSON line per failed run of a job, on every queue (issue 29): ids as fields, whether
   * BullMQ runs it again. A callback attempt to be retried is left out: its attempt line
   * (CallbackDeliveryProcessor) already says so with the delivery's ids and next time.
   */
  private logFailure(queue: string, job: Job | undefined, err: Error): void {
    if (err.name === 'CallbackAttemptError') return;
    const attempts = job?.opts.attempts ?? 1;
    const final = !job || err.name === 'UnrecoverableError' || job.attemptsMade >= attempts;
    const fields = { queue, job: job?.name ?? null, job_id: job?.id ?? null, attempts_made: job?.attemptsMade ?? null, attempts, final, err: err.message };
    this.failures.inc({ queue, job_name: job?.name ?? 'unknown', final: String(final) });
    if (final) this.logger.warn(fields, 'job failed for good');
    else this.logger.warn(fields, 'job failed, BullMQ runs it again');
  }

  /** Every queue has a consumer taking jobs (false once closing, or when one gave up). */
  consuming(): boolean {
    return this.workers.length > 0 && this.workers.every((w) => w.isRunning() && !w.closing);
  }

  /** Lets running jobs finish (a callback attempt is bounded by its timeout) before the queues close. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.workers.splice(0).map((w) => w.close()));
  }
}
