import { Injectable, Logger } from '@nestjs/common';
import { AppConfig, type JobPayloads, QUEUE, parseNotifyUrl } from '@app/common';
import { CallbackAttemptRepository, type DeliveryHead } from '@app/db';
import { JobQueue } from '@app/queue';
import { DeliveryPolicy } from './delivery-policy';
import { DestinationGate, type GateAnswer, type GateKey } from './destination-gate';

/**
 * How long a lined-up delivery's job is parked (delayed) when nothing admits it: its key's next
 * freed slot (or the probe time) promotes it long before, and the sweep reconciles one that a
 * lost line forgot. Not a retry clock: a parked job spends no attempt.
 */
export const PARKED_JOB_DELAY_MS = 24 * 3_600_000;

/**
 * The delivery part of what follows a committed transaction: a callback job for each committed
 * delivery that is first in its order, admitted by its (merchant, destination) key or parked. The
 * row is the truth by then: a failure is logged and left to the sweep, never thrown at a caller
 * whose change is done.
 */
@Injectable()
export class CallbackJobs {
  private readonly logger = new Logger(CallbackJobs.name);
  /** A callback job's attempts are the delivery's: the DeliveryPolicy's, no spare (a wait that is no attempt spends none). */
  private readonly attempts: number;

  constructor(
    config: AppConfig,
    private readonly queue: JobQueue,
    private readonly deliveries: CallbackAttemptRepository,
    private readonly gate: DestinationGate,
  ) {
    this.attempts = new DeliveryPolicy(config.callbackRetryScheduleMs).maxAttempts;
  }

  /**
   * The one funnel for "these delivery rows are committed": each that is first in its order
   * (SPEC 7 Order) gets its job; a later event's delivery gets none yet: the end of the one
   * before names it. A delivery with no address (`no_address`) is not pending and gets none.
   */
  async deliver(deliveryIds: string | string[]): Promise<boolean> {
    const ids = Array.isArray(deliveryIds) ? deliveryIds : [deliveryIds];
    if (ids.length === 0) return true;
    try {
      return await this.deliverHeads(await this.deliveries.heads(ids));
    } catch (err) {
      this.logger.warn(`callback jobs for ${ids.length} deliveries not added, the sweep adds them: ${(err as Error).message}`);
      return false;
    }
  }

  /** deliver() for deliveries known to be first in their order (a transaction returned them, a record named the next). */
  async deliverHeads(heads: DeliveryHead[]): Promise<boolean> {
    try {
      await this.addDeliveryJobs(heads);
      return true;
    } catch (err) {
      this.logger.warn(`callback jobs for ${heads.length} deliveries not added, the sweep adds them: ${(err as Error).message}`);
      return false;
    }
  }

  /**
   * Each delivery's key admits it or not, and its job is added accordingly (addCallbackJobs). A
   * failure is thrown: the callers above log it and leave it to the sweep.
   */
  async addDeliveryJobs(heads: DeliveryHead[]): Promise<void> {
    await addCallbackJobs(this.gate, this.queue, heads, this.attempts);
  }

  /** Wakes the parked jobs of deliveries a key admitted (a freed slot, a closed circuit, a line-up that found a slot). */
  async promoteDeliveries(key: GateKey | null, ids: string[]): Promise<number> {
    return admitCallbackJobs(this.gate, this.queue, key, ids);
  }
}

/**
 * Each delivery's key admits it or not (DestinationGate.enlist): an admitted one's job goes to
 * BullMQ's wait list, the others' are parked (delayed) and then join their key's line, so
 * BullMQ's one FIFO never holds more of a key than its slots (SPEC 7 Fairness). A live job of
 * the same id is left alone. Without a shared gate (no Redis) the worker's take decides alone.
 */
export async function addCallbackJobs(gate: DestinationGate, queue: JobQueue, heads: DeliveryHead[], attempts: number): Promise<void> {
  if (heads.length === 0) return;
  const byKey = new Map<string, { key: GateKey | null; heads: DeliveryHead[] }>();
  for (const h of heads) {
    const destination = parseNotifyUrl(h.notifyUrl)?.destination ?? null;
    const name = destination === null ? '' : `${h.merchantId}|${destination}`;
    const group = byKey.get(name) ?? { key: destination === null ? null : { merchantId: h.merchantId, destination }, heads: [] };
    group.heads.push(h);
    byKey.set(name, group);
  }
  const now = Date.now();
  const jobs: { jobId: string; payload: JobPayloads['callback.deliver']; delay: number }[] = [];
  const toLineUp: { key: GateKey; ids: string[] }[] = [];
  for (const { key, heads: group } of byKey.values()) {
    // No usable address (a row written before the parser): no key to wait for; its attempt says why it cannot go.
    const answers: GateAnswer[] =
      key && gate.shared
        ? await gate.enlist(
            key,
            group.map((h) => h.id),
          )
        : group.map(() => ({ kind: 'run' }));
    const waiting: string[] = [];
    group.forEach((h, i) => {
      const a = answers[i];
      const delay = a.kind === 'run' ? 0 : a.kind === 'held' && a.wakeAt !== null ? Math.max(1, a.wakeAt - now) : PARKED_JOB_DELAY_MS;
      if (delay > 0) waiting.push(h.id);
      jobs.push({ jobId: h.id, payload: { deliveryId: h.id, merchantId: h.merchantId, destination: key?.destination ?? null }, delay });
    });
    if (key && waiting.length > 0) toLineUp.push({ key, ids: waiting });
  }
  for (const delay of new Set(jobs.map((j) => j.delay))) {
    await queue.addBulk(
      'callback.deliver',
      jobs.filter((j) => j.delay === delay),
      { attempts, ...(delay > 0 ? { delay } : {}) },
    );
  }
  // Parked first, lined up after: whoever admits a delivery from the line can promote its job.
  for (const { key, ids } of toLineUp) {
    const answers = await gate.lineUp(key, ids);
    await admitCallbackJobs(
      gate,
      queue,
      key,
      ids.filter((_, i) => answers[i] === 'run'),
    );
  }
}

/** States in which a job has ended: a line entry (or a slot reserved) for it serves nobody. */
const ENDED = new Set(['completed', 'failed', 'unknown']);

/**
 * Promotes the parked jobs of deliveries their key admitted (a slot is reserved for each) or
 * named its circuit's waker. A delivery whose job has ended or is gone (a line entry left behind
 * by a crash or a flushed queue) gives its slot back at once, and whoever that admits is promoted
 * in turn, so a stale entry never holds a slot for a lease. A job not delayed but alive (already
 * running) keeps its slot. Answers how many were woken.
 */
export async function admitCallbackJobs(gate: DestinationGate, queue: JobQueue, key: GateKey | null, ids: string[]): Promise<number> {
  const callbacks = queue.queue(QUEUE.callbacks);
  let woken = 0;
  let next = ids;
  // Bounded: each round frees only what the previous one found ended.
  for (let round = 0; round < 100 && next.length > 0; round++) {
    const ended: string[] = [];
    for (const id of next) {
      try {
        // One command: the backend's promote by id (no read of the job first); it refuses a job that is not delayed.
        await callbacks.backend.promote(id);
        woken++;
      } catch {
        // One unreadable job must not leave the others of this batch unwoken: its lease frees its slot.
        const state = await callbacks
          .getJob(id)
          .then((job) => (job ? job.getState() : 'gone'))
          .catch(() => 'unread');
        if (state === 'gone' || ENDED.has(state)) ended.push(id);
      }
    }
    next = [];
    if (!key) break;
    for (const id of ended) {
      const released = await gate.give(key, id, 'none', false);
      next.push(...released.admitted, ...(released.wake ? [released.wake] : []));
    }
  }
  return woken;
}
