import { Injectable, Logger } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AppConfig, BUY_ORDER, DomainError, ERROR_INFO, ErrorCode, apiMessage, orderPaySpan } from '@app/common';
import { type ChannelAdapter, ChannelAdapters, adapterOffered, type NotificationAnswer, type NotificationContext } from '@app/channels';
import { type Channel, type Order, OrderRepository, RefundRepository } from '@app/db';
import { OrderLifecycle, RefundLifecycle } from '@app/orders';
import { mergeRequestParams } from '../http/request-params';
import { MetricsService } from '../metrics/metrics.service';
import { ChannelLinkCache } from '../orders/channel-link-cache';

/** A notification as it arrived: the request (its parameters are read only for protocols that use them) and its headers and exact body. */
export interface NotificationArrival {
  request: FastifyRequest;
  context: NotificationContext;
}

/**
 * A payment channel's notification (SPEC 6): verified by the channel's adapter, then the
 * order moves through OrderLifecycle. Repeats are answered like the first, so the channel
 * stops resending; the conditional transitions make them change nothing.
 */
@Injectable()
export class ChannelNotifyService {
  private readonly logger = new Logger(ChannelNotifyService.name);

  constructor(
    private readonly channelRows: ChannelLinkCache,
    private readonly orders: OrderRepository,
    private readonly adapters: ChannelAdapters,
    private readonly lifecycle: OrderLifecycle,
    private readonly refundLifecycle: RefundLifecycle,
    private readonly refunds: RefundRepository,
    private readonly metrics: MetricsService,
    private readonly config: AppConfig,
  ) {}

  /** The answer the channel expects: its acknowledgement once handled, else its protocol's failure (or our envelope, for sandbox and epay). */
  async handle(channelIdParam: string, arrival: NotificationArrival): Promise<NotificationAnswer> {
    const channelId = /^\d{1,9}$/.test(channelIdParam) ? Number(channelIdParam) : null;
    // From this process's copy, which a change to the channel empties (ChannelLinkCache).
    const channel = channelId === null ? null : await this.channelRows.findChannel(channelId);
    // With SANDBOX_ENABLED off the sandbox does not exist, not even for orders made before.
    if (!channel || !adapterOffered(channel.adapter, this.config.sandboxEnabled)) throw DomainError.invalid('channelId', apiMessage('notify.unknownChannel'));
    const adapter = this.adapters.forChannel(channel);
    const answers = adapter.notificationAnswers;
    try {
      await this.apply(channel, adapter, arrival);
    } catch (err) {
      if (!answers || !(err instanceof DomainError)) throw err;
      return answers.refused(ERROR_INFO[err.code].status, err.message);
    }
    return answers?.accepted() ?? { status: 200, contentType: 'text/plain; charset=utf-8', body: adapter.acknowledgement };
  }

  private async apply(channel: Channel, adapter: ChannelAdapter, { request, context }: NotificationArrival): Promise<void> {
    const params = adapter.notificationIsJsonDocument ? {} : mergeRequestParams(request);
    const notification = await adapter.verifyNotification(params, context);
    if (!notification) {
      this.logger.warn({ channel_id: channel.id }, 'channel notification refused, it does not verify');
      throw new DomainError(ErrorCode.AuthBadSignature, apiMessage('notify.badSignature'));
    }
    const order = await this.orders.findForChannel(channel.id, notification.orderNo);
    // A payment notification is about a top-up; a sell order's outcome comes from the payout call.
    if (!order || order.orderType !== BUY_ORDER) throw new DomainError(ErrorCode.OrderNotFound);
    if (notification.refund) return this.refundNotified(order, notification.refund.refundNo);

    switch (notification.outcome) {
      case 'failed': {
        // A declined attempt: the order stays payable on its pay_url (SPEC 5).
        const recorded = await this.lifecycle.recordFailedAttempt(order, notification);
        this.logger.log({ order_no: order.orderNo, recorded }, 'channel reports a failed payment attempt');
        return;
      }
      case 'closed': {
        // A pending order is cancelled; any other state stays as it is (a late payment still counts).
        const cancelled = await this.lifecycle.markClosedByChannel(order.id);
        this.logger.log({ order_no: order.orderNo, cancelled }, 'channel reports the trade closed');
        return;
      }
      case 'noted':
        this.logger.log({ order_no: order.orderNo }, 'channel notification verified; nothing to move');
        return;
      case 'paid':
        break;
    }
    // Pay, in the order's trace (issue 40 item 6): the credit, the events and the jobs they enqueue.
    await orderPaySpan(order.orderNo, channel.adapter, async () => {
      const result = await this.lifecycle.markPaid(order, notification, { final: adapter.paidIsFinal });
      if (result === 'amount_mismatch') {
        this.metrics.paymentAmountMismatches.inc();
        throw DomainError.invalid('amount', apiMessage('notify.amountMismatch'));
      }
      if (result === 'not_found') throw new DomainError(ErrorCode.OrderNotFound);
      this.logger.log({ order_no: order.orderNo, result }, 'success notification');
    });
  }

  /**
   * A verified refund notification (wechatpay REFUND.*, alipay's refund notices) settles nothing
   * by itself: it starts the refund's round of talk with the channel now, which queries it, so one
   * path (RefundLifecycle) decides, under its lease, whatever arrives first. Not settled yet: the
   * worker keeps asking. A refund that is not one of ours (made in the provider's own console) is
   * answered as handled: the channel would otherwise send it again for a day.
   */
  private async refundNotified(order: Order, refundNo: string): Promise<void> {
    const refund = await this.refunds.findByRefundNo(order.merchantId, refundNo);
    if (!refund || refund.orderId !== order.id) {
      this.logger.warn({ order_no: order.orderNo, refund_no: refundNo.slice(0, 64) }, 'refund notification about a refund we did not make; nothing to move');
      return;
    }
    try {
      await this.refundLifecycle.process(refund.id);
    } catch (err) {
      this.logger.warn({ refund_no: refundNo }, `refund notification: not settled yet (${(err as Error).message})`);
    }
  }
}
