import { Injectable, Logger } from '@nestjs/common';
import { DelayedError, type Job, UnrecoverableError } from 'bullmq';
import { AppConfig, type JobPayloads, QUEUE, SecretBox, merchantSecretContext, previousMerchantSecretContext } from '@app/common';
import { type AttemptClaim, type ClaimedAttempt, CallbackDeliveryRepository, NonceStore, type RecordedAttempt } from '@app/db';
import { CallbackAttemptError, CallbackSender, DeliveryPolicy, type DeliveryVerdict, RESEND_LIMIT, type SendOutcome, buildSignedCallback, newCallbackNonce } from '@app/callbacks';
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
      return this.park(job, token, Date.now() + this.tuning.callbackPollMs);
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
      const { outcome, ourSide } = await this.send(attempt);
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
    } finally {
      if (key) await this.freeSlot(key, deliveryId);
    }
    await this.follow(key, recorded);
    if (verdict.state === 'succeeded') {
      this.metrics.deliveries.inc({ outcome: 'succeeded' });
      return { deliveryId, status: 'succeeded', attempt: attempt.number };
    }
    if (verdict.state === 'failed') {
      this.metrics.deliveries.inc({ outcome: 'failed' });
      this.metrics.failedDeliveries.inc({ reason: verdict.reason });
      const why =
        verdict.reason === 'gone'
          ? 'HTTP 410, the merchant ended it'
          : verdict.reason === 'blocked'
            ? `its address was refused on ${attempt.number} attempts (${error})`
            : `attempt ${attempt.number} was the last`;
      this.logger.warn({ delivery_id: deliveryId, attempt: attempt.number }, `callback delivery failed for good: ${why}`);
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
        this.metrics.deliveries.inc({ outcome: 'failed' });
        this.metrics.failedDeliveries.inc({ reason: 'abandoned' });
        throw new UnrecoverableError('delivery ended: every attempt was used (a worker stopped during its last one)');
      case 'waiting':
        return this.park(job, token, Date.now() + ORDER_RECHECK_MS);
      case 'leased':
      case 'held':
        return this.park(job, token, claim.until.getTime());
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

  private async park(job: CallbackJob, token: string | undefined, until: number): Promise<never> {
    await job.moveToDelayed(until, token);
    throw new DelayedError();
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
      this.logger.warn(`callback follow-up not done, the jobs' own delays and the sweep cover it: ${(err as Error).message}`);
    }
  }

  /** Frees the slot and wakes the first job parked for it (it may not be parked yet: then its own short delay brings it). */
  private async freeSlot(key: SlotKey, deliveryId: string): Promise<void> {
    try {
      const next = await this.slots.give(key, deliveryId);
      if (next) await this.promote(next);
    } catch (err) {
      this.logger.warn(`callback slot of delivery ${deliveryId} not freed, its lease frees it: ${(err as Error).message}`);
    }
  }

  private async promote(deliveryId: string): Promise<void> {
    const job = await this.jobs.queue(QUEUE.callbacks).getJob(deliveryId);
    if (job && (await job.isDelayed())) await job.promote().catch(() => undefined);
  }

  /** Signs and sends; `ourSide` when nothing reached the merchant because of us (no address, the nonce store). */
  private async send(attempt: ClaimedAttempt): Promise<{ outcome: SendOutcome; ourSide: boolean }> {
    if (!attempt.notifyUrl) return { outcome: notSent('no callback address: neither the order nor the merchant has a notify_url'), ourSide: true };
    let nonce: string;
    try {
      nonce = await this.claimNonce(attempt.merchantApiKey);
    } catch (err) {
      return { outcome: notSent(`not sent: its nonce could not be recorded (${(err as Error).message})`), ourSide: true };
    }
    const apiSecret = this.secretOf(attempt.merchantApiKey, attempt.merchantSecretEnc, merchantSecretContext(attempt.merchantApiKey));
    // During a rotation's grace the claim hands over the previous secret too: webhook-signature carries both (SPEC 3).
    const previousApiSecret = attempt.merchantPreviousSecretEnc
      ? this.secretOf(attempt.merchantApiKey, attempt.merchantPreviousSecretEnc, previousMerchantSecretContext(attempt.merchantApiKey))
      : null;
    const { body, headers } = buildSignedCallback(
      { id: attempt.eventId, type: attempt.eventType, payload: attempt.payload },
      { apiKey: attempt.merchantApiKey, apiSecret, previousApiSecret },
      attempt.number,
      nonce,
    );
    return { outcome: await this.sender.send(attempt.notifyUrl, body, headers), ourSide: false };
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
