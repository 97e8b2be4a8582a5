import { Injectable, Logger } from '@nestjs/common';
import type { JobPayloads } from '@app/common';
import { OrderLifecycle } from '@app/orders';
import { MoneyOutProcessor } from '../money-out/money-out.processor';
import { WorkerTuning } from '../worker-tuning';

/** The 'orders' queue: confirmation, closes the channel did not confirm, refunds and payouts, and the periodic safety net. */
@Injectable()
export class OrdersProcessor {
  private readonly logger = new Logger(OrdersProcessor.name);

  constructor(
    private readonly lifecycle: OrderLifecycle,
    private readonly tuning: WorkerTuning,
    private readonly moneyOut: MoneyOutProcessor,
  ) {}

  /** Throws while the channel has not confirmed, so BullMQ retries with the job's backoff. */
  confirm({ orderId }: JobPayloads['order.confirm']): Promise<void> {
    return this.lifecycle.confirm(orderId);
  }

  /** Throws while neither the payment query nor a close has decided, so BullMQ retries with the job's backoff. */
  settleClose({ orderId }: JobPayloads['order.close']): Promise<void> {
    return this.lifecycle.settleClose(orderId);
  }

  /** Every part runs even if one fails; a failure still fails the job so it shows in the queue. */
  async sweep(): Promise<{ confirmsQueued: number; counterSlotsFolded: number; refundsQueued: number; payoutsQueued: number }> {
    const [orders, moneyOut] = await Promise.allSettled([this.lifecycle.sweep(this.tuning.stuckPaidSeconds), this.moneyOut.sweep()]);
    if (orders.status === 'rejected') throw orders.reason;
    if (moneyOut.status === 'rejected') throw moneyOut.reason;
    const result = { ...orders.value, ...moneyOut.value };
    if (Object.values(result).some((n) => n > 0)) this.logger.log(`sweep: ${JSON.stringify(result)}`);
    return result;
  }
}
