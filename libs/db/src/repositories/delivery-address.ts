/**
 * SPEC 7 Address, the one place its precedence is written: a delivery of an event goes to the
 * event's refund's notify_url, else the order's, else the merchant's, resolved when the delivery
 * is written and kept on it. `event` names a row with "order_id" and "refund_id" (an
 * order_events row, or a CTE returning them). Every stored URL passed the one parser at input.
 * add_callback_delivery (libs/db/src/sql/transition-functions.ts) embeds it: a change ships with a migration reloading it.
 */
export function deliveryAddressSql(event: string): string {
  return `(SELECT COALESCE(r."notify_url", o."notify_url", m."notify_url")
             FROM "orders" o JOIN "merchants" m ON m."id" = o."merchant_id" LEFT JOIN "refunds" r ON r."id" = ${event}."refund_id"
            WHERE o."id" = ${event}."order_id")`;
}
