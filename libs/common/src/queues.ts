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
  /**
   * After orderClose, when the channel did not say the payment is closed (a refusal, an unknown
   * outcome): query the payment and close again until one of them decides (job id = "close-" + order id).
   */
  'order.close': { orderId: string };
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
  'callback.deliver': QUEUE.callbacks,
  'order.confirm': QUEUE.orders,
  'order.close': QUEUE.orders,
  'maintenance.sweep': QUEUE.orders,
  'order.payout': QUEUE.orders,
  'refund.process': QUEUE.orders,
  'recon.daily': QUEUE.orders,
};

/** How long finished jobs stay visible (Bull Board, debugging): a day of completed ones, a week of failed ones. */
const KEEP = { removeOnComplete: { age: 86_400, count: 10_000 }, removeOnFail: { age: 7 * 86_400 } };

/** Retry policies by what the work is, named once; BullMQ's JobsOptions accept them as they are. */
export const RETRY_POLICY = {
  /**
   * One round of talk with a channel (confirm a payment, a close, a refund, a payout): an unknown outcome
   * is queried on the next attempt; past the last one, the sweep starts a new job.
   */
  channelTalk: { ...KEEP, attempts: 10, backoff: { type: 'exponential', delay: 2000 } },
  /** A callback delivery: its attempts are the delivery's own (the caller gives DeliveryPolicy's), each retry's delay the worker's custom backoff (the schedule). */
  delivery: { ...KEEP, backoff: { type: 'custom' } },
  /** A periodic pass: the next one does its work, so a failure is neither retried nor kept long. */
  periodicPass: { removeOnComplete: true, removeOnFail: 100 },
  /** A daily run: kept a week so Bull Board shows the last runs; retried (the run is idempotent), a failure kept a month. */
  dailyRun: { removeOnComplete: { age: 7 * 86_400 }, removeOnFail: { age: 30 * 86_400 }, attempts: 3, backoff: { type: 'exponential', delay: 60_000 } },
} as const;

/** Which policy each job follows. */
export const JOB_RETRY: Record<JobName, (typeof RETRY_POLICY)[keyof typeof RETRY_POLICY]> = {
  'callback.deliver': RETRY_POLICY.delivery,
  'order.confirm': RETRY_POLICY.channelTalk,
  'order.close': RETRY_POLICY.channelTalk,
  'maintenance.sweep': RETRY_POLICY.periodicPass,
  'order.payout': RETRY_POLICY.channelTalk,
  'refund.process': RETRY_POLICY.channelTalk,
  'recon.daily': RETRY_POLICY.dailyRun,
};
