import { Injectable, Logger } from '@nestjs/common';
import type { JobPayloads } from '@app/common';
import { OrderLifecycle } from '@app/orders';
import { CallbackSweeper } from '../callbacks/callback-sweeper';
import { WorkerTuning } from '../worker-tuning';

/** The 'orders' queue: confirmation, and the periodic safety net. */
@Injectable()
export class OrdersProcessor {
  private readonly logger = new Logger(OrdersProcessor.name);

  constructor(
    private readonly lifecycle: OrderLifecycle,
    private readonly callbackSweeper: CallbackSweeper,
    private readonly tuning: WorkerTuning,
  ) {}

  /** Throws while the channel has not confirmed, so BullMQ retries with the job's backoff. */
  confirm({ orderId }: JobPayloads['order.confirm']): Promise<void> {
    return this.lifecycle.confirm(orderId);
  }

  /** Both halves run even if one fails; a failure still fails the job so it shows in the queue. */
  async sweep(): Promise<{ requeuedDeliveries: number; confirmsQueued: number }> {
    const [callbacks, orders] = await Promise.allSettled([this.callbackSweeper.sweep(), this.lifecycle.sweep(this.tuning.stuckPaidSeconds)]);
    if (callbacks.status === 'rejected') throw callbacks.reason;
    if (orders.status === 'rejected') throw orders.reason;
    const result = { requeuedDeliveries: callbacks.value.requeued, ...orders.value };
    if (result.requeuedDeliveries || result.confirmsQueued) this.logger.log(`sweep: ${JSON.stringify(result)}`);
    return result;
  }
}
