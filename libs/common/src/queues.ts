/**
 * Queue names, job names and payloads: the one contract between the API (producer) and
 * the worker (consumer). Payloads carry ids only; the state lives in PostgreSQL.
 */
export const QUEUE = {
  orders: 'orders',
  callbacks: 'callbacks',
} as const;

export interface JobPayloads {
  /**
   * One callback delivery (job id = delivery id): its attempts are the job's. The key of SPEC 7
   * Fairness rides along (from the one URL parser), so slots are taken before the row is read;
   * `destination` is null when the delivery has no usable address.
   */
  'callback.deliver': { deliveryId: string; merchantId: number; destination: string | null };
  /** Re-query the channel for a paid order, then confirm and complete it. */
  'order.confirm': { orderId: string };
  /** Periodic safety net: confirm stuck paid orders, re-enqueue refunds and payouts (expiry is the worker's own loop). */
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
