/**
 * Queue names, job names and payloads: the one contract between the API (producer) and
 * the worker (consumer). Payloads carry ids only; the state lives in PostgreSQL.
 */
export const QUEUE = {
  callbacks: 'callbacks',
  orders: 'orders',
} as const;

export interface JobPayloads {
  /** Send one callback delivery (job id = delivery id). */
  'callback.deliver': { deliveryId: string };
  /** Re-query the channel for a paid order, then confirm and complete it. */
  'order.confirm': { orderId: string };
  /** Periodic safety net: re-enqueue due deliveries, confirm stuck paid orders (expiry is the worker's own loop). */
  'maintenance.sweep': Record<string, never>;
  /** Ask the channel to pay a sell order out, or query it about an earlier request (job id = "payout-" + order id). */
  'order.payout': { orderId: string };
  /** Ask the channel for a refund, or query it about an earlier request (job id = "refund-" + refund id). */
  'refund.process': { refundId: string };
}

export type JobName = keyof JobPayloads;

/** Which queue carries each job. */
export const JOB_QUEUE: Record<JobName, (typeof QUEUE)[keyof typeof QUEUE]> = {
  'callback.deliver': QUEUE.callbacks,
  'order.confirm': QUEUE.orders,
  'maintenance.sweep': QUEUE.orders,
  'order.payout': QUEUE.orders,
  'refund.process': QUEUE.orders,
};
