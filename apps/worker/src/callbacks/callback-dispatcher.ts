import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig, CALLBACK_DUE_CHANNEL } from '@app/common';
import { type ClaimedAttempt, CallbackDeliveryRepository, type FinishedAttempt, NotificationListener } from '@app/db';
import { CallbackSender } from '@app/callbacks';
import { WorkerTuning } from '../worker-tuning';
import { CallbackDeliveryProcessor } from './callback-delivery.processor';
import { WorkerMetrics } from './worker-metrics';

/** How long a claim is this worker's beyond the HTTP budget: the time to record the outcome. */
const LEASE_MARGIN_MS = 30_000;

/**
 * The callback dispatcher: the pending callback_deliveries rows are its queue. It claims due
 * deliveries in batches (claim_callback_deliveries applies SPEC 7's order, per-destination limit
 * and circuit for every worker at once), sends up to `callbackConcurrency` at a time, and records
 * finished attempts in batches, one statement each. It wakes on a NOTIFY from JobsAfterCommit,
 * on its own recordings (a success may release an order's next event), and at least every
 * `callbackPollMs` or when the next retry is due.
 */
@Injectable()
export class CallbackDispatcher implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('CallbackDispatcher');
  private listener: NotificationListener | null = null;
  private loop: Promise<void> | null = null;
  private stopping = false;
  /** Claimed and not yet recorded: sending, or waiting for the recorder. */
  private held = 0;
  private readonly sending = new Set<Promise<void>>();
  private finished: FinishedAttempt[] = [];
  private recording: Promise<void> | null = null;
  private wakeRequested = false;
  private wakeUp: (() => void) | null = null;
  private failing = false;

  constructor(
    private readonly config: AppConfig,
    private readonly tuning: WorkerTuning,
    private readonly deliveries: CallbackDeliveryRepository,
    private readonly processor: CallbackDeliveryProcessor,
    private readonly sender: CallbackSender,
    private readonly metrics: WorkerMetrics,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.listener = new NotificationListener(this.config.databaseUrl, CALLBACK_DUE_CHANNEL, {
      notification: () => this.wake(),
      // Anything announced while it was down is found by the claim that follows.
      listening: () => this.wake(),
      lost: (err) => this.logger.warn(`wake-ups lost, polling every ${this.tuning.callbackPollMs} ms until they are back: ${err.message}`),
    });
    await this.listener.start();
    this.loop = this.run();
  }

  /** The dispatcher is claiming (false once stopping). */
  get running(): boolean {
    return this.loop !== null && !this.stopping;
  }

  /** Something may have become due: claim now rather than at the next poll. */
  wake(): void {
    this.wakeRequested = true;
    const resolve = this.wakeUp;
    this.wakeUp = null;
    resolve?.();
  }

  /**
   * SIGTERM: no more claims; the attempts in flight finish (each within the callback timeout)
   * and are recorded, so the next worker continues exactly where this one stopped.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.loop;
    await Promise.all([...this.sending]);
    await this.flush();
    await this.listener?.stop();
    await this.sender.close();
  }

  private async run(): Promise<void> {
    // Claims wait for a few free slots while attempts are in flight: one claim statement per batch, not per delivery.
    const minBatch = Math.max(1, Math.floor(this.tuning.callbackConcurrency / 8));
    while (!this.stopping) {
      const free = this.tuning.callbackConcurrency - this.held;
      if (free <= 0 || (free < minBatch && this.held > 0)) {
        // A recording frees slots and wakes this.
        this.wakeRequested = false;
        await this.sleep(this.tuning.callbackPollMs);
        continue;
      }
      this.wakeRequested = false;
      let claimed: ClaimedAttempt[];
      try {
        claimed = await this.claim(free);
      } catch (err) {
        if (!this.failing) this.logger.error(`claiming callback deliveries failed, retrying every ${this.tuning.callbackPollMs} ms: ${(err as Error).message}`);
        this.failing = true;
        await this.sleep(this.tuning.callbackPollMs);
        continue;
      }
      if (this.failing) this.logger.log('claiming callback deliveries works again');
      this.failing = false;
      for (const attempt of claimed) this.start(attempt);
      if (claimed.length < free && !this.wakeRequested) await this.sleep(await this.idleWait());
    }
  }

  private async claim(limit: number): Promise<ClaimedAttempt[]> {
    const batch = await this.deliveries.claimDue({
      limit,
      leaseMs: this.sender.timeoutMs + LEASE_MARGIN_MS,
      perDestination: this.config.callbackDestinationConcurrency,
      probeMs: this.config.callbackCircuitProbeSeconds * 1000,
      maxAttempts: this.processor.maxAttempts,
    });
    for (const id of batch.exhausted) {
      this.logger.warn(`delivery ${id} failed for good: every attempt was used (a worker stopped during its last one)`);
      this.metrics.deliveries.inc({ outcome: 'failed' });
    }
    return batch.attempts;
  }

  /** Until the next pending delivery is due, at most one poll interval. */
  private async idleWait(): Promise<number> {
    try {
      const next = await this.deliveries.nextDueInMs();
      return next === null ? this.tuning.callbackPollMs : Math.min(Math.max(next, 1), this.tuning.callbackPollMs);
    } catch {
      return this.tuning.callbackPollMs;
    }
  }

  private start(attempt: ClaimedAttempt): void {
    this.held++;
    const sent = this.processor.attempt(attempt).then(
      (finished) => {
        this.metrics.attemptSeconds.observe({ outcome: finished.status === 'succeeded' ? 'success' : 'failure' }, finished.durationMs / 1000);
        this.finished.push(finished);
        void this.flush();
      },
      (err: Error) => {
        // Not expected (attempt() reports every failure as an outcome): the lease expires and the row is sent again.
        this.logger.error(`delivery ${attempt.deliveryId}: attempt ${attempt.number} ended without an outcome: ${err.message}`);
        this.held--;
      },
    );
    this.sending.add(sent);
    void sent.finally(() => this.sending.delete(sent));
  }

  /** Records every finished attempt, in batches: one runs at a time, and what finished meanwhile is the next batch. */
  private flush(): Promise<void> {
    if (!this.recording) {
      this.recording = this.recordAll().finally(() => (this.recording = null));
    }
    return this.recording;
  }

  private async recordAll(): Promise<void> {
    while (this.finished.length > 0) {
      const batch = this.finished.splice(0);
      try {
        await this.deliveries.recordFinished(batch, { failures: this.config.callbackCircuitFailures, probeMs: this.config.callbackCircuitProbeSeconds * 1000 });
      } catch (err) {
        // The lease keeps the rows this worker's until it expires; a later claim re-sends them (at least once).
        this.logger.error(`recording ${batch.length} callback attempts failed, their leases will expire and they are sent again: ${(err as Error).message}`);
        this.held -= batch.length;
        if (!this.stopping) this.wake();
        continue;
      }
      for (const f of batch) if (f.status !== 'pending') this.metrics.deliveries.inc({ outcome: f.status });
      this.held -= batch.length;
      // Slots are free, and a success may have released its order's next event.
      this.wake();
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopping || this.wakeRequested) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wakeUp = null;
        resolve();
      }, ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
