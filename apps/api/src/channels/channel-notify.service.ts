import { Injectable, Logger } from '@nestjs/common';
import { AppConfig, BUY_ORDER, DomainError, ErrorCode } from '@app/common';
import { ChannelAdapters } from '@app/channels';
import { ChannelRepository, OrderRepository } from '@app/db';
import { OrderLifecycle } from '@app/orders';
import { MetricsService } from '../metrics/metrics.service';

/**
 * A payment channel's notification (SPEC 6): verified by the channel's adapter, then the
 * order moves through OrderLifecycle. Repeats are answered like the first, so the channel
 * stops resending; the conditional transitions make them change nothing.
 */
@Injectable()
export class ChannelNotifyService {
  private readonly logger = new Logger(ChannelNotifyService.name);

  constructor(
    private readonly channels: ChannelRepository,
    private readonly orders: OrderRepository,
    private readonly adapters: ChannelAdapters,
    private readonly lifecycle: OrderLifecycle,
    private readonly metrics: MetricsService,
    private readonly config: AppConfig,
  ) {}

  /** Returns the body the channel expects on acceptance. */
  async handle(channelIdParam: string, params: Record<string, unknown>): Promise<string> {
    const channelId = /^\d{1,9}$/.test(channelIdParam) ? Number(channelIdParam) : null;
    const channel = channelId === null ? null : await this.channels.findById(channelId);
    // With SANDBOX_ENABLED off the sandbox does not exist, not even for orders made before.
    if (!channel || (channel.adapter === 'sandbox' && !this.config.sandboxEnabled)) throw DomainError.invalid('channelId', 'unknown payment channel');
    const adapter = this.adapters.forChannel(channel);
    const notification = adapter.verifyNotification(params);
    if (!notification) {
      this.logger.warn({ channel_id: channel.id }, 'channel notification refused, it does not verify');
      throw new DomainError(ErrorCode.AuthBadSignature, 'Notification signature does not verify');
    }
    const order = await this.orders.findForChannel(channel.id, notification.orderNo);
    // A payment notification is about a top-up; a sell order's outcome comes from the payout call.
    if (!order || order.orderType !== BUY_ORDER) throw new DomainError(ErrorCode.OrderNotFound);

    if (notification.outcome === 'failed') {
      const cancelled = await this.lifecycle.markFailed(order.id);
      this.logger.log({ order_no: order.orderNo, cancelled }, 'channel reports failure');
      return adapter.acknowledgement;
    }
    const result = await this.lifecycle.markPaid(order.id, notification);
    if (result === 'amount_mismatch') {
      this.metrics.paymentAmountMismatches.inc();
      throw DomainError.invalid('amount', 'does not equal the order amount');
    }
    if (result === 'not_found') throw new DomainError(ErrorCode.OrderNotFound);
    this.logger.log({ order_no: order.orderNo, result }, 'success notification');
    return adapter.acknowledgement;
  }
}
