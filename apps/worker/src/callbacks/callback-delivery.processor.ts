import { Injectable, Logger } from '@nestjs/common';
import { DelayedError, type Job, UnrecoverableError } from 'bullmq';
import { AppConfig, type JobPayloads, QUEUE, SecretBox, merchantSecretContext, previousMerchantSecretContext } from '@app/common';
import { type AttemptClaim, type ClaimedAttempt, CallbackDeliveryRepository, NonceStore, type RecordedAttempt } from '@app/db';
import {
  CallbackAttemptError,
  CallbackSender,
  DeliveryPolicy,
  type DeliveryVerdict,
  INTERNAL_FAILURE_TEXT,
  RESEND_LIMIT,
  type SendOutcome,
  buildSignedCallback,
  newCallbackNonce,
} from '@app/callbacks';
import { JobsAfterCommit } from '@app/orders';
import { JobQueue } from '@app/queue';
import { WorkerTuning } from '../worker-tuning';
import { DestinationSlots, type SlotKey } from './destination-slots';
import { WorkerMetrics } from './worker-metrics';

/** Decrypted secrets kept per ciphertext: a rotation writes a new ciphertext, so a stale entry is never read. */
const SECRET_CACHE_SIZE = 1000;
/** How long a claim is this worker's beyond the HTTP budget: the time to record the outcome. */
const LEASE_MARGIN_MS = 30_000;
/** A delivery whose order has an earlier pending event looks again after this at the latest; that one's end wakes it sooner. */
const ORDER_RECHECK_MS = 60_000;
/** Held deliveries a closed circuit wakes at once; the rest come at their probe time. */
const RELEASE_BATCH = 1000;

export type CallbackJob = Job<JobPayloads['callback.deliver']>;

/** An attempt's end as its log line names it (issue 29): one line per attempt, ids as fields. */
type AttemptStatus = 'succeeded' | 'retry' | 'exhausted' | 'gone' | 'blocked';

/** What send() tells besides the outcome: nothing reached the merchant because of us, and why (for the log only). */
interface Sent {
  outcome: SendOutcome;
  ourSide: boolean;
  /** Our own failure's detail (an exception's message): logged, never stored where a merchant reads it. */
  detail?: string;
}

/** How a callback job ended without throwing. */
export interface DeliveryResult {
  deliveryId: string;
  status: 'succeeded' | 'settled' | 'resent';
  attempt?: number;
}

/**
 * One 'callback.deliver' job: one attempt of one delivery, under SPEC 7's rules. A slot of its
 * (merchant, destination) first (none free: the job is parked, no attempt spent); then the
 * claim, which says whether an attempt may go now (its order, its circuit, its lease); then
 * sign, send, ask the DeliveryPolicy what follows, and record that. A retry throws
 * CallbackAttemptError (BullMQ waits the policy's delay), the end throws UnrecoverableError, a
 * wait that is not an attempt moves the job to delayed (DelayedError: no attempt spent).
 */
@Injectable()
export class CallbackDeliveryProcessor {
  private readonly logger = new Logger('CallbackDelivery');
  private readonly secretCache = new Map<string, string>();
  readonly policy: DeliveryPolicy;

  constructor(
    private readonly config: AppConfig,
    private readonly tuning: WorkerTuning,
    private readonly deliveries: CallbackDeliveryRepository,
    private readonly secrets: SecretBox,
    private readonly sender: CallbackSender,
    private readonly nonces: NonceStore,
    private readonly slots: DestinationSlots,
    private readonly afterCommit: JobsAfterCommit,
    private readonly jobs: JobQueue,
    private readonly metrics: WorkerMetrics,
  ) {
    this.policy = new DeliveryPolicy(config.callbackRetryScheduleMs);
  }

  private get leaseMs(): number {
    return this.sender.timeoutMs + LEASE_MARGIN_MS;
  }

  async deliver(job: CallbackJob, token: string | undefined): Promise<DeliveryResult> {
    const { deliveryId, merchantId, destination } = job.data;
    const key: SlotKey | null = destination ? { merchantId, destination } : null;
    if (key && !(await this.slots.take(key, deliveryId, this.leaseMs))) {
      // Parked without spending an attempt; a freed slot of its key promotes it sooner.
      return this.park(job, token, Date.now() + this.tuning.callbackPollMs, 'slot');
    }
    let claim: AttemptClaim;
    let verdict: DeliveryVerdict;
    let attempt: ClaimedAttempt;
    let recorded: RecordedAttempt;
    let error: string | null;
    try {
      claim = await this.deliveries.claim(deliveryId, destination ?? '', {
        leaseMs: this.leaseMs,
        probeMs: this.config.callbackCircuitProbeSeconds * 1000,
        maxAttempts: this.policy.maxAttempts,
      });
      if (claim.kind !== 'claimed') return await this.notNow(job, token, claim);
      attempt = claim.attempt;
      if (attempt.probe) this.logCircuit('half_open', job.data, attempt.number);
      const { outcome, ourSide, detail } = await this.send(attempt);
      error = outcome.error;
      this.metrics.attemptSeconds.observe({ outcome: outcome.ok ? 'success' : 'failure' }, outcome.durationMs / 1000);
      verdict = this.policy.afterAttempt({ number: attempt.number, outcome, ourSide });
      recorded = await this.deliveries.record(
        {
          deliveryId,
          number: attempt.number,
          url: attempt.notifyUrl,
          httpStatus: outcome.httpStatus,
          durationMs: outcome.durationMs,
          responseExcerpt: outcome.excerpt,
          error: outcome.error,
          status: verdict.state,
          nextAttemptAt: verdict.state === 'pending' ? new Date(Date.now() + verdict.retryInMs) : null,
          circuit: verdict.circuit,
          destination: destination ?? '',
        },
        { failures: this.config.callbackCircuitFailures, probeMs: this.config.callbackCircuitProbeSeconds * 1000 },
      );
      this.logAttempt(job.data, attempt, outcome, verdict, detail);
    } finally {
      if (key) await this.freeSlot(key, deliveryId);
    }
    await this.follow(key, recorded);
    this.watchCircuit(key, attempt, verdict, recorded);
    if (verdict.state === 'succeeded') {
      this.metrics.settled(job.data.merchantId, 'succeeded');
      return { deliveryId, status: 'succeeded', attempt: attempt.number };
    }
    if (verdict.state === 'failed') {
      this.metrics.settled(job.data.merchantId, 'failed');
      this.metrics.failedDeliveries.inc({ reason: verdict.reason });
      const why =
        verdict.reason === 'gone'
          ? 'HTTP 410, the merchant ended it'
          : verdict.reason === 'blocked'
            ? `its address was refused on ${attempt.number} attempts (${error})`
            : `attempt ${attempt.number} was the last`;
      throw new UnrecoverableError(`delivery ended: ${why}`);
    }
    throw new CallbackAttemptError(`attempt ${attempt.number} failed: ${error}`, verdict.retryInMs);
  }

  /** A claim that sends nothing now: settle the job, or park it until it may try again (no attempt spent). */
  private async notNow(job: CallbackJob, token: string | undefined, claim: Exclude<AttemptClaim, { kind: 'claimed' }>): Promise<DeliveryResult> {
    switch (claim.kind) {
      case 'settled':
        // A failed job run again with its failure cleared: an operator pressed retry in Bull Board.
        if (job.attemptsMade > 0 && !job.failedReason) return this.resendForOperator(job);
        return { deliveryId: job.data.deliveryId, status: 'settled' };
      case 'exhausted':
        this.logger.warn(
          {
            delivery_id: job.data.deliveryId,
            merchant_id: job.data.merchantId,
            destination: job.data.destination,
            status: 'exhausted',
            reason: 'abandoned: every attempt was used, a worker stopped during the last',
          },
          'callback delivery ended',
        );
        this.metrics.settled(job.data.merchantId, 'failed');
        this.metrics.failedDeliveries.inc({ reason: 'abandoned' });
        throw new UnrecoverableError('delivery ended: every attempt was used (a worker stopped during its last one)');
      case 'waiting':
        return this.park(job, token, Date.now() + ORDER_RECHECK_MS, 'order');
      case 'leased':
      case 'held':
        return this.park(job, token, claim.until.getTime(), claim.kind);
    }
  }

  /** SPEC 7 Durability: a retry pressed in Bull Board does what callbackResend does (same event_id, same hourly limit). */
  private async resendForOperator(job: CallbackJob): Promise<DeliveryResult> {
    const result = await this.deliveries.resendOrderOf(job.data.deliveryId, RESEND_LIMIT);
    if (result.kind === 'limited') throw new UnrecoverableError('not resent: this order had 10 resends within the hour (SPEC 7 callbackResend)');
    if (result.kind === 'not_found') throw new UnrecoverableError('not resent: the order has no callback event');
    await this.afterCommit.deliver(result.deliveryId);
    this.logger.log({ delivery_id: job.data.deliveryId, resent_as: result.deliveryId }, 'operator retry in Bull Board: resent like callbackResend');
    return { deliveryId: result.deliveryId, status: 'resent' };
  }

  /** `why`: every slot of its destination busy, an earlier event of its order pending, another worker's lease, an open circuit. */
  private async park(job: CallbackJob, token: string | undefined, until: number, why: 'slot' | 'order' | 'leased' | 'held'): Promise<never> {
    await job.moveToDelayed(until, token);
    if (why === 'held' || why === 'order') await this.wakeIfFreedMeanwhile(job, why);
    // Debug: a busy destination parks its jobs often; the attempt lines are the outcomes.
    this.logger.debug(
      {
        delivery_id: job.data.deliveryId,
        merchant_id: job.data.merchantId,
        destination: job.data.destination,
        status: 'parked',
        reason: why,
        until: new Date(until).toISOString(),
      },
      'callback job parked, no attempt spent',
    );
    throw new DelayedError();
  }

  /**
   * What held the job may have ended between its claim and its park: its circuit closed (a
   * probe's success, callback:circuit:reset) or its order's earlier delivery ended. Their side
   * wakes the jobs it finds parked, and this one was not parked yet; so, once parked, the job
   * looks again and wakes itself. Each side checks after its own write, so neither misses the
   * other, and nothing waits a probe interval or ORDER_RECHECK_MS for nothing. One indexed read
   * per such park, which is rare: a held delivery parks once per probe interval, and an order's
   * later delivery rarely has a job before the earlier one ends.
   */
  private async wakeIfFreedMeanwhile(job: CallbackJob, why: 'held' | 'order'): Promise<void> {
    const { deliveryId, merchantId, destination } = job.data;
    try {
      const stillHeld =
        why === 'held' ? !!destination && (await this.deliveries.circuitIsOpen(merchantId, destination)) : await this.deliveries.hasEarlierPending(deliveryId);
      if (!stillHeld) await job.promote();
    } catch (err) {
      // Promoted already by the other side, or the read failed: the park's own time brings it at the latest.
      this.logger.debug({ delivery_id: deliveryId, reason: why, err: (err as Error).message }, 'parked callback job not woken by its second look');
    }
  }

  /** After the record committed: the order's next delivery gets its job, a closed circuit releases what it held. */
  private async follow(key: SlotKey | null, recorded: RecordedAttempt): Promise<void> {
    try {
      if (recorded.next) {
        await this.afterCommit.addDeliveryJobs([recorded.next]);
        await this.promote(recorded.next.id);
      }
      if (recorded.circuitClosed && key) {
        for (const id of await this.deliveries.heldBy(key.merchantId, key.destination, RELEASE_BATCH)) await this.promote(id);
      }
    } catch (err) {
      // The rows say what is due: the parked jobs come at their own time, a missing one from the sweep.
      this.logger.warn(
        { next_delivery_id: recorded.next?.id ?? null, err: (err as Error).message },
        "callback follow-up not done, the jobs' own delays and the sweep cover it",
      );
    }
  }

  /** Frees the slot and wakes the first job parked for it (it may not be parked yet: then its own short delay brings it). */
  private async freeSlot(key: SlotKey, deliveryId: string): Promise<void> {
    try {
      const next = await this.slots.give(key, deliveryId);
      if (next) await this.promote(next);
    } catch (err) {
      this.logger.warn(
        { delivery_id: deliveryId, merchant_id: key.merchantId, destination: key.destination, err: (err as Error).message },
        'callback slot not freed, its lease frees it',
      );
    }
  }

  private async promote(deliveryId: string): Promise<void> {
    const job = await this.jobs.queue(QUEUE.callbacks).getJob(deliveryId);
    if (job && (await job.isDelayed())) await job.promote().catch(() => undefined);
  }

  /**
   * Signs and sends; `ourSide` when nothing reached the merchant because of us (no address, the
   * nonce store, a secret that does not open): then the stored error is a fixed text and the
   * exception's message goes to the log only (`detail`).
   */
  private async send(attempt: ClaimedAttempt): Promise<Sent> {
    if (!attempt.notifyUrl) return { outcome: notSent('no callback address: neither the order nor the merchant has a notify_url'), ourSide: true };
    let signed: ReturnType<typeof buildSignedCallback>;
    try {
      const nonce = await this.claimNonce(attempt.merchantApiKey).catch((err: unknown) => {
        throw new Error(`its nonce could not be recorded: ${(err as Error)?.message ?? String(err)}`);
      });
      const apiSecret = this.secretOf(attempt.merchantApiKey, attempt.merchantSecretEnc, merchantSecretContext(attempt.merchantApiKey));
      // During a rotation's grace the claim hands over the previous secret too: webhook-signature carries both (SPEC 3).
      const previousApiSecret = attempt.merchantPreviousSecretEnc
        ? this.secretOf(attempt.merchantApiKey, attempt.merchantPreviousSecretEnc, previousMerchantSecretContext(attempt.merchantApiKey))
        : null;
      signed = buildSignedCallback(
        { id: attempt.eventId, type: attempt.eventType, payload: attempt.payload },
        { apiKey: attempt.merchantApiKey, apiSecret, previousApiSecret },
        attempt.number,
        nonce,
      );
    } catch (err) {
      return { outcome: notSent(INTERNAL_FAILURE_TEXT), ourSide: true, detail: (err as Error)?.message ?? String(err) };
    }
    return { outcome: await this.sender.send(attempt.notifyUrl, signed.body, signed.headers), ourSide: false };
  }

  /**
   * One JSON line per attempt (issue 29): ids as fields, the merchant-facing reason, our own
   * failure's detail as `err`; never the URL's path or query, a body, a signature or a secret.
   */
  private logAttempt(
    data: JobPayloads['callback.deliver'],
    attempt: ClaimedAttempt,
    outcome: SendOutcome,
    verdict: DeliveryVerdict,
    detail: string | undefined,
  ): void {
    const status: AttemptStatus = verdict.state === 'succeeded' ? 'succeeded' : verdict.state === 'pending' ? 'retry' : verdict.reason;
    const fields: Record<string, unknown> = {
      delivery_id: data.deliveryId,
      event_id: attempt.eventId,
      merchant_id: data.merchantId,
      destination: data.destination,
      attempt: attempt.number,
      status,
      http_status: outcome.httpStatus,
      duration_ms: outcome.durationMs,
      reason: outcome.error,
    };
    if (verdict.state === 'pending') fields.next_attempt_at = new Date(Date.now() + verdict.retryInMs).toISOString();
    if (attempt.probe) fields.probe = true;
    if (detail !== undefined) fields.err = detail;
    if (status === 'succeeded') this.logger.log(fields, 'callback delivered');
    else if (status === 'retry')
      this.logger.log(fields, detail === undefined ? 'callback attempt failed, will retry' : 'callback not sent by our own fault, will retry');
    else this.logger.warn(fields, 'callback delivery ended');
  }

  private logCircuit(state: 'opened' | 'half_open' | 'closed' | 'still_open', data: JobPayloads['callback.deliver'], attempt: number, failures?: number): void {
    const fields = {
      merchant_id: data.merchantId,
      destination: data.destination,
      circuit: state,
      delivery_id: data.deliveryId,
      attempt,
      ...(failures === undefined ? {} : { failures }),
    };
    const message = {
      opened: 'callback circuit opened: deliveries to this destination wait for a probe',
      half_open: 'callback circuit half-open: sending a probe',
      closed: 'callback circuit closed: its held deliveries go now',
      still_open: 'callback circuit probe failed: it stays open',
    }[state];
    if (state === 'opened' || state === 'still_open') this.logger.warn(fields, message);
    else this.logger.log(fields, message);
  }

  /** After the record: a line when this attempt changed its circuit (closed it, opened it, or its probe failed). */
  private watchCircuit(key: SlotKey | null, attempt: ClaimedAttempt, verdict: DeliveryVerdict, recorded: RecordedAttempt): void {
    if (!key) return;
    const data = { deliveryId: attempt.deliveryId, merchantId: key.merchantId, destination: key.destination };
    if (recorded.circuitClosed) return this.logCircuit('closed', data, attempt.number);
    if (verdict.circuit !== 'failure') return;
    if (attempt.probe) return this.logCircuit('still_open', data, attempt.number);
    // Decided in the record's statement: of several failures of one key at once, exactly one opened it.
    if (recorded.circuitOpened) this.logCircuit('opened', data, attempt.number, this.config.callbackCircuitFailures);
  }

  private secretOf(apiKey: string, sealed: string, context: string): string {
    const key = `${apiKey}\n${sealed}`;
    const cached = this.secretCache.get(key);
    if (cached !== undefined) return cached;
    const secret = this.secrets.open(sealed, context);
    if (this.secretCache.size >= SECRET_CACHE_SIZE) this.secretCache.clear();
    this.secretCache.set(key, secret);
    return secret;
  }

  /**
   * SPEC 3: a callback is signed like a request, so its nonce is spent in the merchants' nonce
   * store before it leaves: its body sent back to the API is 40104, never answered as the merchant.
   */
  private async claimNonce(apiKey: string): Promise<string> {
    const nonce = newCallbackNonce();
    if (!(await this.nonces.claim(apiKey, nonce))) throw new Error('a fresh random nonce was already used');
    return nonce;
  }
}

function notSent(error: string): SendOutcome {
  return { ok: false, httpStatus: null, durationMs: 0, excerpt: null, error, retryAfterMs: null };
}
