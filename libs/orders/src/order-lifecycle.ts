import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { AppConfig, BUY_ORDER } from '@app/common';
import { type ChannelAdapter, ChannelAdapters, ChannelError, type PaymentCreated, type PaymentQuery } from '@app/channels';
import {
  type Channel,
  ChannelRepository,
  type Move,
  type NewOrder,
  type Order,
  OrderEventRepository,
  OrderRepository,
  type OrderStatus,
  type RecordedEvent,
  type SettlementEvent,
  SettlementRepository,
} from '@app/db';
import { JobsAfterCommit } from './jobs-after-commit';
import { Transitions, orderTransitionEvents } from './transitions';
import { amountMismatchPayload, attemptFailedPayload } from './order-event-payload';
import { ORDER_TRANSITIONS } from './order-transitions';

/** What a verified success notification did to its order. */
export type MarkPaidResult = 'paid' | 'late_paid' | 'unchanged' | 'amount_mismatch' | 'not_found';

/** The channel has not (yet) confirmed a paid order: thrown so the queue retries the job. */
export class PaymentNotConfirmedError extends Error {
  constructor(orderNo: string, why: string) {
    super(`order ${orderNo}: ${why}`);
    this.name = 'PaymentNotConfirmedError';
  }
}

/** How many rows one pass of a sweep takes (overdue orders, stuck confirmations, lost deliveries). */
export const SWEEP_BATCH = 500;

// The moves this lifecycle makes, named by their cause; the states and order types come from the table (SPEC 5).
const PAY = ORDER_TRANSITIONS.move('notification', 'late_notification');
// The channel could not open the payment at creation; a failed payment attempt later is no move (recordFailedAttempt).
const FAIL = ORDER_TRANSITIONS.move('channel_failure');
const EXPIRE = ORDER_TRANSITIONS.move('expiry');
const CONFIRM = ORDER_TRANSITIONS.move('confirmation');
const CREDIT = ORDER_TRANSITIONS.move('credit');
const CLOSE = ORDER_TRANSITIONS.move('close');
const CHANNEL_CLOSED = ORDER_TRANSITIONS.move('channel_closed');
/**
 * confirmation then credit as one conditional UPDATE (paid -> completed): no one else sees the
 * confirmed state between them in one transaction, so the second UPDATE's round trip is saved.
 */
const CONFIRM_THEN_CREDIT: Move<OrderStatus> = {
  from: CONFIRM.from,
  to: CREDIT.to,
  pairs: CONFIRM.pairs.filter((p) => CREDIT.pairs.some((c) => c.from === CONFIRM.to && c.orderType === p.orderType)),
};
/** A final payment's whole settlement as one conditional UPDATE: pending (or cancelled) -> paid -> confirmed -> completed. */
const PAY_THEN_SETTLE: Move<OrderStatus> = {
  from: PAY.from,
  to: CREDIT.to,
  pairs: PAY.pairs.filter((p) => CONFIRM_THEN_CREDIT.pairs.some((c) => c.from === PAY.to && c.orderType === p.orderType)),
};

/** An event of a settlement (settle_order), its payload from the order as read with the status the event reports. */
function settlementEvent(order: Order, type: 'order.paid' | 'order.completed'): SettlementEvent {
  return orderTransitionEvents(order, type === 'order.paid' ? PAY.to : CREDIT.to, [{ type }])[0];
}

/**
 * The order state machine of SPEC 5, shared by the API (notifications, creation) and the
 * worker (expiry, confirmation, sweep). Every transition is one conditional UPDATE and writes
 * its event and callback delivery in the same transaction; jobs and wake-ups follow the commit.
 */
@Injectable()
export class OrderLifecycle {
  private readonly logger = new Logger(OrderLifecycle.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
    private readonly orders: OrderRepository,
    private readonly events: OrderEventRepository,
    private readonly settlement: SettlementRepository,
    private readonly transitions: Transitions,
    private readonly channels: ChannelRepository,
    private readonly adapters: ChannelAdapters,
    private readonly afterCommit: JobsAfterCommit,
  ) {}

  get expireSeconds(): number {
    return this.config.orderExpireSeconds;
  }

  /**
   * Asks the channel for the payment (under the channel timeout, holding no database
   * connection), then inserts the pending order with its pay_url in one statement: a
   * concurrent repeat of its merchant_order_no meets the unique index and finds the finished
   * order. A channel failure records the order as cancelled, with its order.cancelled event.
   */
  async create(values: NewOrder, channel: Channel): Promise<{ order: Order; channelFailed: boolean }> {
    let payment: PaymentCreated;
    try {
      const adapter = this.adapters.forChannel(channel);
      payment = await this.adapters.call((signal) =>
        adapter.createPayment(
          {
            orderNo: values.orderNo,
            amountFen: values.cnyFen,
            payMethod: values.paymentMethod ?? '',
            subject: values.subject ?? `Order ${values.orderNo}`,
            notifyUrl: this.adapters.notifyUrl(channel.id),
            returnUrl: values.returnUrl,
            expiresAt: values.expiresAt,
          },
          signal,
        ),
      );
    } catch (err) {
      if (!(err instanceof ChannelError)) throw err;
      this.logger.warn({ order_no: values.orderNo, channel_id: channel.id, err: err.message }, 'channel failed at creation, order cancelled');
      const cancelled = await this.transitions.order((em) => this.orders.insert(em, values), FAIL, [{ type: 'order.cancelled', reason: 'failed' }]);
      if (!cancelled) throw new Error(`order ${values.orderNo} left pending in its own transaction`, { cause: err });
      return { order: cancelled, channelFailed: true };
    }
    // No job per order: the worker's expiry pass cancels it once expires_at has passed.
    const order = await this.orders.insert(this.dataSource.manager, values, payment);
    return { order, channelFailed: false };
  }

  /**
   * A verified success notification (or a channel's paid answer to a query): pending -> paid, or
   * cancelled -> paid flagged as a late payment (the money was taken). Only when the amount
   * equals the order's. `final` (the adapter's paidIsFinal): the provider's word needs no
   * re-query, so paid -> confirmed -> completed and the credit share paid's transaction, with
   * order.paid and order.completed recorded in that order (SPEC 5); otherwise the confirm job
   * re-queries the channel first. `target`: the order's id, or the order as the caller has just
   * read it (its amount never changes, and the transition checks its state again).
   */
  async markPaid(
    target: string | Order,
    notification: { amountFen: number; channelTradeNo: string | null },
    { final }: { final: boolean },
  ): Promise<MarkPaidResult> {
    const order = typeof target === 'string' ? await this.orders.findById(target) : target;
    if (!order) return 'not_found';
    if (notification.amountFen !== order.cnyFen) {
      this.logger.warn(
        { order_no: order.orderNo, notified_fen: notification.amountFen, order_fen: order.cnyFen },
        'notification amount differs from the order; refused',
      );
      await this.dataSource.transaction((em) =>
        this.events.recordWithoutCallback(em, order, 'payment.amount_mismatch', (eventId) => amountMismatchPayload(eventId, order, notification)),
      );
      return 'amount_mismatch';
    }
    const paidChange = { paid: true, channelTradeNo: notification.channelTradeNo };
    if (final) {
      // The four states, order.paid then order.completed with their deliveries, and the credit: one statement, its own transaction.
      const settled = await this.settlement.settle(this.dataSource.manager, order.id, PAY_THEN_SETTLE, paidChange, [
        settlementEvent(order, 'order.paid'),
        settlementEvent(order, 'order.completed'),
      ]);
      if (settled) {
        await this.transitions.deliver(settled.events);
        return settled.latePayment ? 'late_paid' : 'paid';
      }
      // Not pending or cancelled any more (a repeat), or an order type settled in steps: as below.
    }
    const paid = await this.transitions.order(order, PAY, [{ type: 'order.paid' }], {
      changes: paidChange,
      alongside: final ? async (em, moved) => [await this.settle(em, moved)].filter((e) => e !== null) : undefined,
    });
    if (!paid) return 'unchanged';
    if (!final) await this.afterCommit.enqueue('order.confirm', { orderId: order.id }, { jobId: `confirm-${order.id}` });
    return paid.latePayment ? 'late_paid' : 'paid';
  }

  /** The channel reports the unpaid trade closed (alipay TRADE_CLOSED): pending -> cancelled, reason closed. */
  async markClosedByChannel(orderId: string): Promise<boolean> {
    const order = await this.orders.findById(orderId);
    return order !== null && (await this.transitions.order(order, CHANNEL_CLOSED, [{ type: 'order.cancelled', reason: 'closed' }])) !== null;
  }

  /**
   * The channel reports a failed payment attempt (SPEC 5): no transition, the order stays payable
   * until it expires; a pending top-up keeps the attempt in its history as payment.attempt_failed
   * (no callback). Any other order is left as it is, its history too.
   */
  async recordFailedAttempt(order: Order, notification: { channelTradeNo: string | null }): Promise<boolean> {
    if (order.status !== 'pending' || order.orderType !== BUY_ORDER) return false;
    await this.events.recordWithoutCallback(this.dataSource.manager, order, 'payment.attempt_failed', (eventId) =>
      attemptFailedPayload(eventId, order, notification),
    );
    return true;
  }

  /**
   * One expiry pass: up to `limit` pending orders whose expires_at has passed become cancelled,
   * with their order.cancelled events and deliveries, in one transaction of two statements.
   * Concurrent passes (several workers) skip each other's rows: an order expires once.
   */
  async expireOverdue(limit: number = SWEEP_BATCH): Promise<number> {
    return this.transitions.orders((em) => this.orders.lockOverdue(em, EXPIRE, limit), EXPIRE, { type: 'order.cancelled', reason: 'expired' });
  }

  /**
   * The 'order.confirm' job: re-query the channel, then paid -> confirmed -> completed,
   * crediting the merchant once, in one transaction (SPEC 5: the crediting step may share the
   * confirmation's). Throws while the channel does not confirm, so BullMQ retries.
   */
  async confirm(orderId: string): Promise<void> {
    const order = await this.orders.findById(orderId);
    if (!order) {
      this.logger.warn({ order_id: orderId }, 'confirm: no such order');
      return;
    }
    let confirmation: { channelTradeNo: string | null } | null = null;
    if (CONFIRM.from.includes(order.status)) {
      const channel = await this.channels.findById(order.channelId);
      if (!channel) throw new PaymentNotConfirmedError(order.orderNo, 'its channel no longer exists');
      const adapter = this.adapters.forChannel(channel);
      const status = await this.adapters.call((signal) =>
        adapter.queryPayment({ orderNo: order.orderNo, amountFen: order.cnyFen, channelTradeNo: order.channelTradeNo, paidAt: order.paidAt }, signal),
      );
      if (status.state !== 'paid') throw new PaymentNotConfirmedError(order.orderNo, `channel answers ${status.state}`);
      if (status.amountFen !== null && status.amountFen !== order.cnyFen) {
        throw new PaymentNotConfirmedError(order.orderNo, `channel reports ${status.amountFen} fen, the order is ${order.cnyFen} fen`);
      }
      confirmation = { channelTradeNo: status.channelTradeNo };
    } else if (!CREDIT.from.includes(order.status)) {
      // Not paid yet, cancelled, or completed already: nothing to confirm.
      return;
    }
    // Each settle_order statement is its own transaction. A concurrent confirm finds the order moved and changes nothing.
    const recorded = await this.settle(this.dataSource.manager, order, confirmation ?? {});
    if (recorded) await this.transitions.deliver([recorded]);
  }

  /**
   * paid -> confirmed (when `order` was read paid) -> completed, with order.completed, its delivery
   * and the credit, in one statement (settle_order), the balance row locked last: in the caller's
   * transaction if `em` is one, else its own. Null when the order had moved on (a concurrent
   * settlement did it): one credit whichever comes first.
   */
  private async settle(em: EntityManager, order: Order, confirmation: { channelTradeNo?: string | null } = {}): Promise<RecordedEvent | null> {
    const completed = [settlementEvent(order, 'order.completed')];
    // Read paid: both moves in one UPDATE; should the row be confirmed already, the credit alone, as before.
    const settled =
      (CONFIRM.from.includes(order.status) ? await this.settlement.settle(em, order.id, CONFIRM_THEN_CREDIT, confirmation, completed) : null) ??
      (await this.settlement.settle(em, order.id, CREDIT, {}, completed));
    return settled?.events[0] ?? null;
  }

  /**
   * The safety net: re-enqueue confirmation of orders stuck in paid (expiry has its own pass,
   * expireOverdue); and fold past days' order counter slots, so old totals stay one row per key.
   */
  async sweep(stuckPaidSeconds: number): Promise<{ confirmsQueued: number; counterSlotsFolded: number }> {
    const ids = await this.orders.findStuckPaidIds(stuckPaidSeconds, SWEEP_BATCH);
    const confirmsQueued = await this.afterCommit.requeueStuck('order.confirm', { ids, stuckSeconds: stuckPaidSeconds }, (id) => ({
      payload: { orderId: id },
      jobId: `confirm-${id}`,
    }));
    const counterSlotsFolded = await this.orders.foldPastDayCountSlots(SWEEP_BATCH * 10);
    return { confirmsQueued, counterSlotsFolded };
  }

  /**
   * orderClose: the merchant cancels its pending top-up (order.cancelled, reason closed), then the
   * channel is told where its protocol can close a payment. Null when the order was not a
   * pending top-up. A success notification arriving after this still counts, as after expiry.
   */
  async close(orderId: string): Promise<Order | null> {
    const order = await this.orders.findById(orderId);
    const closed = order && (await this.transitions.order(order, CLOSE, [{ type: 'order.cancelled', reason: 'closed' }]));
    if (!closed) return null;
    await this.tellChannelClosed(closed);
    return closed;
  }

  /**
   * The order is closed on our side whatever the channel answers. When the channel does not say
   * the payment is closed (it refused: paid meanwhile; or the outcome is unknown), the payer may
   * have paid: the 'order.close' job lets the payment query decide (SPEC 6).
   */
  private async tellChannelClosed(order: Order): Promise<void> {
    let outcome: string;
    try {
      const adapter = await this.adapterOf(order);
      const closePayment = adapter.closePayment?.bind(adapter);
      if (!closePayment) return;
      const answer = await this.adapters.call((signal) => closePayment(this.paymentQuery(order), signal));
      if (answer.state === 'closed') return;
      outcome = `refused: ${answer.refusal.failure}`;
    } catch (err) {
      outcome = (err as Error).message;
    }
    this.logger.warn(
      { order_no: order.orderNo, channel_id: order.channelId, outcome },
      'order closed, but the channel did not say the payment is closed; the payment query decides',
    );
    await this.afterCommit.enqueue('order.close', { orderId: order.id }, { jobId: `close-${order.id}` });
  }

  /**
   * The 'order.close' job: for a closed order whose channel did not confirm the close, the payment
   * query decides. Paid: moved as a late notification would (one credit, whichever comes first).
   * Unpaid: closed again; a close the channel confirms or refuses ends it, an unknown outcome
   * throws so BullMQ asks again later.
   */
  async settleClose(orderId: string): Promise<void> {
    const order = await this.orders.findById(orderId);
    // Paid late meanwhile (its notification came), or gone: nothing left to decide.
    if (!order || order.status !== 'cancelled') return;
    const adapter = await this.adapterOf(order);
    const status = await this.adapters.call((signal) => adapter.queryPayment(this.paymentQuery(order), signal));
    if (status.state === 'paid') {
      if (status.amountFen === null) throw new PaymentNotConfirmedError(order.orderNo, 'the channel reports it paid without an amount');
      const result = await this.markPaid(order, { amountFen: status.amountFen, channelTradeNo: status.channelTradeNo }, { final: adapter.paidIsFinal });
      this.logger.warn({ order_no: order.orderNo, result }, 'closed order: the channel reports it paid after all');
      return;
    }
    const closePayment = adapter.closePayment?.bind(adapter);
    if (!closePayment) return;
    const answer = await this.adapters.call((signal) => closePayment(this.paymentQuery(order), signal));
    if (answer.state === 'refused')
      this.logger.warn(
        { order_no: order.orderNo, failure: answer.refusal.failure },
        'closed order unpaid at the channel, which refuses to close it; a later payment still counts',
      );
  }

  private async adapterOf(order: Order): Promise<ChannelAdapter> {
    const channel = await this.channels.findById(order.channelId);
    if (!channel) throw new ChannelError(`order ${order.orderNo}: its channel no longer exists`);
    return this.adapters.forChannel(channel);
  }

  private paymentQuery(order: Order): PaymentQuery {
    return { orderNo: order.orderNo, amountFen: order.cnyFen, channelTradeNo: order.channelTradeNo, paidAt: order.paidAt };
  }
}
