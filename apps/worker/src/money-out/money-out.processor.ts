import { Injectable } from '@nestjs/common';
import type { JobPayloads } from '@app/common';
import { RefundLifecycle, PayoutLifecycle } from '@app/orders';
import { WorkerTuning } from '../worker-tuning';

/** Money out on the 'orders' queue: refunds and payouts, each asked of the channel once and then queried. */
@Injectable()
export class MoneyOutProcessor {
  constructor(
    private readonly refunds: RefundLifecycle,
    private readonly sellOrders: PayoutLifecycle,
    private readonly tuning: WorkerTuning,
  ) {}

  /** Throws while the channel has not settled the refund, so BullMQ retries with the job's backoff. */
  refund({ refundId }: JobPayloads['refund.process']): Promise<void> {
    return this.refunds.process(refundId);
  }

  /** Throws while the channel has not settled the payout, so BullMQ retries with the job's backoff. */
  payout({ orderId }: JobPayloads['order.payout']): Promise<void> {
    return this.sellOrders.payout(orderId);
  }

  /** The maintenance sweep's part: a new job for refunds and payouts nobody has worked on for a while. */
  async sweep(): Promise<{ refundsQueued: number; payoutsQueued: number }> {
    const [refundsQueued, payoutsQueued] = await Promise.all([
      this.refunds.sweep(this.tuning.stuckPaidSeconds),
      this.sellOrders.sweep(this.tuning.stuckPaidSeconds),
    ]);
    return { refundsQueued, payoutsQueued };
  }
}
