import { formatRate, formatYuan, storedRateE8, unixSeconds } from '@app/common';
import type { Order, OrderEventType } from '@app/db';

/**
 * The callback body of SPEC 7 at the moment of the event, without the per-attempt fields
 * (api_key, timestamp, nonce, signature) the sender adds.
 */
export function orderEventPayload(eventId: string, type: OrderEventType, order: Order): Record<string, unknown> {
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
export function amountMismatchPayload(eventId: string, order: Order, notification: { amountFen: number; channelTradeNo: string | null }): Record<string, unknown> {
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
