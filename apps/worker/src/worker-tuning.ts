import { CALLBACK_TIMEOUT_MS } from '@app/callbacks';

/**
 * Internal knobs of the worker, not part of the contract: production uses the defaults; tests
 * and the benchmark shorten them. Also the DI token.
 */
export class WorkerTuning {
  /** Budget of one callback HTTP exchange (SPEC 7: 10 s). */
  callbackTimeoutMs = CALLBACK_TIMEOUT_MS;
  /** Callback jobs in flight per worker copy: they mostly wait on merchants. */
  callbackConcurrency = 64;
  /** A callback job whose delivery could not be read (PostgreSQL away) comes back after this, no attempt spent. */
  callbackPollMs = 1_000;
  /** A pending delivery this overdue may have lost its job (Redis emptied): the sweep re-adds it. */
  sweepGraceMs = 60_000;
  ordersConcurrency = 4;
  /** How often each worker copy cancels the pending orders whose time ran out. */
  expiryIntervalMs = 1_000;
  /** How often the maintenance sweep runs (one job per interval across all copies). */
  sweepIntervalMs = 30_000;
  /** A paid order untouched this long is assumed to have lost its confirm job; the sweep re-enqueues it. */
  stuckPaidSeconds = 300;
  /** Rows per retention delete (one statement, one short transaction). */
  retentionBatch = 1_000;
  /** Retention batches per maintenance sweep: a backlog is worked off over several sweeps. */
  retentionBatchesPerSweep = 20;
  /** BullMQ job lock: a worker that died holding a job is noticed after about this long. */
  lockDurationMs = 30_000;

  constructor(values: Partial<WorkerTuning> = {}) {
    Object.assign(this, values);
  }
}
