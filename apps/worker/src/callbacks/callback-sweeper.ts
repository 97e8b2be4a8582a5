import { Injectable, Logger } from '@nestjs/common';
import { QUEUE, parseNotifyUrl } from '@app/common';
import { CallbackJobs, DestinationGate, type GateKey } from '@app/callbacks';
import { CallbackSweepRepository, type DeliveryHead } from '@app/db';
import { SWEEP_BATCH } from '@app/orders';
import { JobQueue } from '@app/queue';
import { WorkerTuning } from '../worker-tuning';

/** States in which a job still carries its delivery forward on its own. */
const RUNNING_STATES = new Set(['active', 'waiting', 'waiting-children', 'prioritized']);

/**
 * The safety net that reconciles rows and jobs (SPEC 7 Durability), part of the maintenance
 * sweep (one per interval across every worker), a batch of overdue rows at a time:
 *  - a due delivery whose job is gone (Redis emptied, an add after commit that failed, a job that
 *    ended while its row stayed pending) gets a new one;
 *  - a due delivery whose job is parked is enlisted with its key again: admitted (promoted) when a
 *    slot is free, made its open circuit's waker when the last one went away (a worker killed
 *    before it promoted it), else lined up (a line lost with a Redis failover).
 */
@Injectable()
export class CallbackSweeper {
  private readonly logger = new Logger('CallbackSweeper');

  constructor(
    private readonly tuning: WorkerTuning,
    private readonly deliveries: CallbackSweepRepository,
    private readonly jobs: JobQueue,
    private readonly callbacks: CallbackJobs,
    private readonly gate: DestinationGate,
  ) {}

  async sweep(): Promise<{ callbacksRequeued: number }> {
    const queue = this.jobs.queue(QUEUE.callbacks);
    const lost: DeliveryHead[] = [];
    const parked: DeliveryHead[] = [];
    for (const due of await this.deliveries.takeOverdue(this.tuning.sweepGraceMs, SWEEP_BATCH)) {
      const job = await queue.getJob(due.id);
      if (job) {
        const state = await job.getState();
        if (RUNNING_STATES.has(state)) continue;
        if (state === 'delayed') {
          parked.push(due);
          continue;
        }
        // A finished job keeps its id and would silently swallow the new add: clear it first.
        try {
          await job.remove();
        } catch (err) {
          this.logger.warn(
            { delivery_id: due.id, job_state: state, err: (err as Error).message },
            'callback job could not be cleared for the sweep to add it again',
          );
          continue;
        }
      }
      lost.push(due);
    }
    await this.callbacks.addDeliveryJobs(lost);
    await this.reenlist(parked);
    await this.reconcileSlots([...lost, ...parked]);
    if (lost.length > 0) this.logger.log({ deliveries: lost.length }, 're-added the jobs of lost callback deliveries');
    // The deliveries-by-status gauge sums what was appended since this fold.
    await this.deliveries.foldStatusCounts();
    return { callbacksRequeued: lost.length };
  }

  /**
   * The slots of every key with overdue deliveries: a slot reserved for a delivery whose job was
   * never woken (an admission whose promote was lost with a crash or an outage, an add that found
   * the delivery's parked job already there) or whose job has ended holds the key for nobody until
   * its lease ends, and an overdue line waits behind it. Each holder's parked job is promoted, an
   * ended one's slot given back (and whoever that admits promoted): admitCallbackJobs. A running
   * holder is left alone.
   */
  private async reconcileSlots(overdue: DeliveryHead[]): Promise<void> {
    const keys = new Map<string, GateKey>();
    for (const due of overdue) {
      const destination = parseNotifyUrl(due.notifyUrl)?.destination;
      if (destination) keys.set(`${due.merchantId}|${destination}`, { merchantId: due.merchantId, destination });
    }
    for (const key of keys.values()) {
      const holders = await this.gate.holders(key);
      const woken = holders.length > 0 ? await this.callbacks.promoteDeliveries(key, holders) : 0;
      if (woken > 0)
        this.logger.warn(
          { merchant_id: key.merchantId, destination: key.destination, deliveries: woken },
          'callback slots held by parked jobs: woke them (an admission had not promoted them)',
        );
    }
  }

  /**
   * Parked jobs of overdue deliveries: their key admits them now (promoted), makes one its open
   * circuit's waker (promoted: its take parks it until the probe time), or keeps them in its line
   * (joined in the same step, since they are parked).
   */
  private async reenlist(parked: DeliveryHead[]): Promise<void> {
    for (const due of parked) {
      const destination = parseNotifyUrl(due.notifyUrl)?.destination;
      const key = destination ? { merchantId: due.merchantId, destination } : null;
      const [answer] = key ? await this.gate.enlist(key, [due.id], { parked: true }) : [{ kind: 'run' as const }];
      if (answer.kind === 'run' || (answer.kind === 'held' && answer.wakeAt !== null)) await this.callbacks.promoteDeliveries(key, [due.id]);
    }
  }
}
