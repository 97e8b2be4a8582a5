import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '@app/common';
import { RetentionRepository } from '@app/db';
import { WorkerTuning } from '../worker-tuning';

/** SPEC 10: a destination nobody has sent to for this long loses its circuit row. */
export const IDLE_CIRCUIT_DAYS = 30;
const DAY_MS = 86_400_000;

export interface RetentionResult {
  attemptsDeleted: number;
  deliveriesDeleted: number;
  eventsDeleted: number;
  circuitsDeleted: number;
  /** Batches run; at retentionBatchesPerSweep the next sweep carries on where this one stopped. */
  batches: number;
}

/**
 * Keeps the callback tables bounded (SPEC 10 Retention), as part of the maintenance sweep (one
 * per interval across every worker): deliveries that ended more than RETENTION_DAYS ago with
 * their attempts, then events older than that with no delivery left, each in batches of
 * retentionBatch rows, at most retentionBatchesPerSweep of them per sweep, so a backlog of
 * millions is worked off over a few sweeps without one long transaction. The repository keeps
 * whatever a pending delivery, an open refund or payout, or an unreconciled day needs.
 */
@Injectable()
export class RetentionSweep {
  private readonly logger = new Logger('RetentionSweep');

  constructor(
    private readonly config: AppConfig,
    private readonly tuning: WorkerTuning,
    private readonly retention: RetentionRepository,
  ) {}

  async sweep(now = Date.now()): Promise<RetentionResult> {
    const before = new Date(now - this.config.retentionDays * DAY_MS);
    const batch = this.tuning.retentionBatch;
    const result: RetentionResult = { attemptsDeleted: 0, deliveriesDeleted: 0, eventsDeleted: 0, circuitsDeleted: 0, batches: 0 };
    while (result.batches < this.tuning.retentionBatchesPerSweep) {
      const gone = await this.retention.deleteDeliveries(before, batch);
      result.batches++;
      result.attemptsDeleted += gone.attempts;
      result.deliveriesDeleted += gone.deliveries;
      if (gone.deliveries < batch) break;
    }
    while (result.batches < this.tuning.retentionBatchesPerSweep) {
      const events = await this.retention.deleteEvents(before, batch);
      result.batches++;
      result.eventsDeleted += events;
      if (events < batch) break;
    }
    result.circuitsDeleted = await this.retention.deleteIdleCircuits(new Date(now - IDLE_CIRCUIT_DAYS * DAY_MS), batch);
    if (result.deliveriesDeleted + result.eventsDeleted + result.circuitsDeleted > 0) {
      this.logger.log(
        {
          attempts_deleted: result.attemptsDeleted,
          deliveries_deleted: result.deliveriesDeleted,
          events_deleted: result.eventsDeleted,
          circuits_deleted: result.circuitsDeleted,
          batches: result.batches,
          retention_days: this.config.retentionDays,
        },
        'retention sweep removed old callback history',
      );
    }
    return result;
  }
}
