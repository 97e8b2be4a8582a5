import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { OrderLifecycle, SWEEP_BATCH } from '@app/orders';
import { WorkerTuning } from '../worker-tuning';

/** Batches one pass may take back to back before yielding to the next interval. */
const MAX_BATCHES_PER_PASS = 20;

/**
 * Cancels pending orders whose time ran out (SPEC 5, ORDER_EXPIRE_SECONDS), every
 * `expiryIntervalMs`, in batches of SWEEP_BATCH: no queue job per order. Every worker copy
 * runs one; their batches skip each other's rows, so an order is cancelled once.
 */
@Injectable()
export class ExpiryLoop implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('ExpiryLoop');
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;
  private failing = false;

  constructor(
    private readonly lifecycle: OrderLifecycle,
    private readonly tuning: WorkerTuning,
  ) {}

  onApplicationBootstrap(): void {
    this.schedule();
  }

  /** Expires overdue orders until a batch comes back short (or the per-pass bound); returns how many. */
  async pass(): Promise<number> {
    let expired = 0;
    for (let batch = 0; batch < MAX_BATCHES_PER_PASS && !this.stopped; batch++) {
      const n = await this.lifecycle.expireOverdue(SWEEP_BATCH);
      expired += n;
      if (n < SWEEP_BATCH) break;
    }
    return expired;
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.pass()
        .then((expired) => {
          if (this.failing) this.logger.log('expiry pass works again');
          this.failing = false;
          if (expired > 0) this.logger.log(`expired ${expired} orders`);
        })
        .catch((err: Error) => {
          // Once per outage, not once a second: the database being down is reported elsewhere too.
          if (!this.failing) this.logger.error(`expiry pass failed, retrying every ${this.tuning.expiryIntervalMs} ms: ${err.message}`);
          this.failing = true;
        })
        .finally(() => {
          this.running = null;
          this.schedule();
        });
    }, this.tuning.expiryIntervalMs);
  }
}
