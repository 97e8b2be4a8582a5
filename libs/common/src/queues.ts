/**
 * Queue names, job names and payloads: the one contract between the API (producer) and
 * the worker (consumer). Payloads carry ids only; the state lives in PostgreSQL.
 */
export const QUEUE = {
  orders: 'orders',
} as const;

/**
 * Callbacks have no queue job: the pending callback_deliveries rows are the queue. This
 * PostgreSQL NOTIFY channel wakes the workers' dispatchers when rows become due.
 */
export const CALLBACK_DUE_CHANNEL = 'callback_due';

export interface JobPayloads {
  /** Re-query the channel for a paid order, then confirm and complete it. */
  'order.confirm': { orderId: string };
  /** Periodic safety net: confirm stuck paid orders, re-enqueue refunds and payouts (expiry is the worker's own loop). */
  'maintenance.sweep': Record<string, never>;
  /** Ask the channel to pay a sell order out, or query it about an earlier request (job id = "payout-" + order id). */
  'order.payout': { orderId: string };
  /** Ask the channel for a refund, or query it about an earlier request (job id = "refund-" + refund id). */
  'refund.process': { refundId: string };
  /** The daily reconciliation (SPEC 6): the previous Asia/Shanghai day of every enabled channel, from a job scheduler at RECON_AT. */
  'recon.daily': Record<string, never>;
}

export type JobName = keyof JobPayloads;

/** Which queue carries each job. */
export const JOB_QUEUE: Record<JobName, (typeof QUEUE)[keyof typeof QUEUE]> = {
  'order.confirm': QUEUE.orders,
  'maintenance.sweep': QUEUE.orders,
  'order.payout': QUEUE.orders,
  'refund.process': QUEUE.orders,
  'recon.daily': QUEUE.orders,
};
