import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { ChannelAdapters } from '@app/channels';
import { ChannelRepository, type DueQuery, LostNotificationRepository } from '@app/db';
import { OrderLifecycle } from '@app/orders';

/** How often the worker looks for checkpoints reached; well under SPEC 6's one minute. */
export const LOST_NOTIFICATION_INTERVAL_MS = 10_000;
const BATCH = 100;

/**
 * SPEC 6, lost notifications: a pending top-up on a live channel is queried at the channel about
 * 1 min and 5 min after creation and just before it expires. A paid answer goes through
 * OrderLifecycle.markPaid exactly as the notification would (one conditional transition, so one
 * credit whichever comes first; settled at once where the channel's word is final, else after
 * the confirm job's re-query; another amount is recorded as payment.amount_mismatch).
 */
@Injectable()
export class LostNotificationLoop implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('LostNotificationLoop');
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;

  constructor(
    private readonly due: LostNotificationRepository,
    private readonly channels: ChannelRepository,
    private readonly adapters: ChannelAdapters,
    private readonly lifecycle: OrderLifecycle,
  ) {}

  onApplicationBootstrap(): void {
    this.schedule();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** One pass: every order at a checkpoint is queried once; returns how many the channel said were paid. */
  async pass(): Promise<number> {
    let found = 0;
    for (;;) {
      const batch = await this.due.claimDue(BATCH);
      for (const order of batch) if (await this.query(order)) found++;
      if (batch.length < BATCH || this.stopped) return found;
    }
  }

  /** A failed query is logged and left: the next checkpoint, the merchant's own query or reconciliation asks again. */
  private async query(order: DueQuery): Promise<boolean> {
    try {
      const channel = await this.channels.findById(order.channelId);
      if (!channel) return false;
      const adapter = this.adapters.forChannel(channel);
      const status = await this.adapters.call((signal) =>
        adapter.queryPayment({ orderNo: order.orderNo, amountFen: order.cnyFen, channelTradeNo: order.channelTradeNo, paidAt: null }, signal),
      );
      if (status.state !== 'paid' || status.amountFen === null) return false;
      const result = await this.lifecycle.markPaid(
        order.id,
        { amountFen: status.amountFen, channelTradeNo: status.channelTradeNo },
        { final: adapter.paidIsFinal },
      );
      this.logger.log({ order_no: order.orderNo, checkpoint: order.checkpoint, result }, 'lost notification: the channel reports the order paid');
      return result === 'paid' || result === 'late_paid';
    } catch (err) {
      this.logger.warn({ order_no: order.orderNo, checkpoint: order.checkpoint }, `lost-notification query failed: ${(err as Error).message}`);
      return false;
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.pass()
        .catch((err: Error) => this.logger.error(`lost-notification pass failed: ${err.message}`))
        .finally(() => {
          this.running = null;
          this.schedule();
        });
    }, LOST_NOTIFICATION_INTERVAL_MS);
  }
}
