import { formatRate, formatYuan, storedRateE8, unixSeconds } from '@app/common';
import type { Order, OrderEventType, Refund } from '@app/db';

/** Why an order was cancelled, in its order.cancelled event (an additive field of SPEC 7's body). */
export type CancelReason = 'expired' | 'failed' | 'closed' | 'refused';

/**
 * The callback body of SPEC 7 at the moment of the event, without the per-attempt fields
 * (api_key, timestamp, nonce, signature) the sender adds.
 */
export function orderEventPayload(eventId: string, type: OrderEventType, order: Order, reason?: CancelReason): Record<string, unknown> {
  return {
    ...orderFields(eventId, type, order),
    ...(reason ? { reason } : {}),
  };
}

function orderFields(eventId: string, type: OrderEventType, order: Order): Record<string, unknown> {
  return {
    event_id: eventId,
    event: type,
    order_no: order.orderNo,
    merchant_order_no: order.merchantOrderNo,
    order_type: order.orderType,
    status: order.status,
    cny_amount: formatYuan(order.cnyFen),
    merchant_actual_amount: order.merchantActualFen,
    service_rate: formatRate(storedRateE8(order.serviceRate, `order ${order.orderNo}`)),
    service_amount: order.serviceFen,
    createtime: unixSeconds(order.createdAt),
    updatetime: unixSeconds(order.updatedAt),
    paid_at: order.paidAt ? unixSeconds(order.paidAt) : null,
  };
}

/** SPEC 6: what reconciliation needs of a verified notification whose amount differs from the order's. */
export function amountMismatchPayload(
  eventId: string,
  order: Order,
  notification: { amountFen: number; channelTradeNo: string | null },
): Record<string, unknown> {
  return {
    event_id: eventId,
    event: 'payment.amount_mismatch',
    order_no: order.orderNo,
    merchant_order_no: order.merchantOrderNo,
    status: order.status,
    cny_amount: formatYuan(order.cnyFen),
    notified_amount: formatYuan(notification.amountFen),
    channel_trade_no: notification.channelTradeNo,
  };
}

/** SPEC 5: a failed payment attempt (the payer's bank declined, the sandbox's Fail), kept in the order's history; the order stays payable. */
export function attemptFailedPayload(eventId: string, order: Order, notification: { channelTradeNo: string | null }): Record<string, unknown> {
  return {
    event_id: eventId,
    event: 'payment.attempt_failed',
    order_no: order.orderNo,
    merchant_order_no: order.merchantOrderNo,
    status: order.status,
    cny_amount: formatYuan(order.cnyFen),
    channel_trade_no: notification.channelTradeNo,
  };
}

/** A refund as refundQuery, refundQueryList and refundCreate show it (SPEC 5). */
export interface RefundView {
  refund_no: string;
  merchant_refund_no: string;
  order_no: string;
  refund_amount: string;
  status: Refund['status'];
  reason: string | null;
  createtime: number;
  updatetime: number;
}

export function refundView(refund: Refund): RefundView {
  return {
    refund_no: refund.refundNo,
    merchant_refund_no: refund.merchantRefundNo,
    order_no: refund.orderNo,
    refund_amount: formatYuan(refund.refundFen),
    status: refund.status,
    reason: refund.reason,
    createtime: unixSeconds(refund.createdAt),
    updatetime: unixSeconds(refund.updatedAt),
  };
}

/** refund.succeeded / refund.failed: the refund's fields plus its order's numbers. */
export function refundEventPayload(eventId: string, type: 'refund.succeeded' | 'refund.failed', refund: Refund, order: Order): Record<string, unknown> {
  return { event_id: eventId, event: type, ...refundView(refund), merchant_order_no: order.merchantOrderNo };
}
