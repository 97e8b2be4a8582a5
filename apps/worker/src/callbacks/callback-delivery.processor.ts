import { Injectable, Logger } from '@nestjs/common';
import { DelayedError, type Job, UnrecoverableError } from 'bullmq';
import { AppConfig, type JobPayloads, SecretBox, merchantSecretContext, previousMerchantSecretContext } from '@app/common';
import { CallbackAttemptRepository, CallbackDeliveryRepository, type FinishedAttempt, type LoadedDelivery, NonceStore, type RecordedAttempt } from '@app/db';
import {
  CallbackAttemptError,
  CallbackJobs,
  CallbackSender,
  DeliveryPolicy,
  type DeliveryVerdict,
  DestinationGate,
  type GateAnswer,
  type GateKey,
  type GateRelease,
  INTERNAL_FAILURE_TEXT,
  PARKED_JOB_DELAY_MS,
  RESEND_LIMIT,
  type SendOutcome,
  buildSignedCallback,
  newCallbackNonce,
} from '@app/callbacks';
import { WorkerTuning } from '../worker-tuning';
import { WorkerMetrics } from './worker-metrics';

/** Decrypted secrets kept per ciphertext: a rotation writes a new ciphertext, so a stale entry is never read. */
const SECRET_CACHE_SIZE = 1000;
/** How long a slot is this worker's beyond the HTTP budget: the time to record the outcome. */
const LEASE_MARGIN_MS = 30_000;

export type CallbackJob = Job<JobPayloads['callback.deliver']>;

/** Why a job waits without an attempt: its key's slots are busy, or its circuit is open. */
type ParkReason = Extract<GateAnswer, { kind: 'wait' | 'held' }>;

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
 * One 'callback.deliver' job: one attempt of one delivery, in stages that only go forward
 * (docs/callbacks-design.md; svix's worker.rs):
 *   take (its key's slot or circuit; not now: parked, no attempt spent) -> load (a plain read)
 *   -> send (sign, POST) -> decide (DeliveryPolicy, pure) -> give (the slot back; the gate says
 *   the circuit's transition and who goes next) -> record (once, with the circuit's mirror)
 *   -> follow (promote the admitted, add the order's next) -> the job ends.
 * A retry throws CallbackAttemptError (BullMQ waits the policy's delay: the one clock), the end
 * throws UnrecoverableError, a wait that is no attempt moves the job to delayed (DelayedError).
 */
@Injectable()
export class CallbackDeliveryProcessor {
  private readonly logger = new Logger('CallbackDelivery');
  private readonly secretCache = new Map<string, string>();
  readonly policy: DeliveryPolicy;

  constructor(
    private readonly config: AppConfig,
    private readonly tuning: WorkerTuning,
    private readonly attempts: CallbackAttemptRepository,
    private readonly portal: CallbackDeliveryRepository,
    private readonly secrets: SecretBox,
    private readonly sender: CallbackSender,
    private readonly nonces: NonceStore,
    private readonly gate: DestinationGate,
    private readonly callbacks: CallbackJobs,
    private readonly metrics: WorkerMetrics,
  ) {
    this.policy = new DeliveryPolicy(config.callbackRetryScheduleMs);
  }

  private get leaseMs(): number {
    return this.sender.timeoutMs + LEASE_MARGIN_MS;
  }

  async deliver(job: CallbackJob, token: string | undefined): Promise<DeliveryResult> {
    const { deliveryId, merchantId, destination } = job.data;
    const key: GateKey | null = destination ? { merchantId, destination } : null;
    // take
    const admitted: GateAnswer = key ? await this.gate.take(key, deliveryId, this.leaseMs) : { kind: 'run' };
    if (admitted.kind === 'wait' || admitted.kind === 'held') return this.park(job, token, key!, admitted);
    const probe = admitted.kind === 'probe';
    // load
    let delivery: LoadedDelivery | null;
    try {
      delivery = await this.attempts.load(deliveryId);
    } catch (err) {
      // Nothing sent: the slot back (whoever it admits is woken), and the job waits a moment without spending an attempt.
      if (key) await this.follow(key, await this.giveBack(key, deliveryId, 'none', probe), null);
      return this.retryLoad(job, token, err);
    }
    if (!delivery || delivery.status !== 'pending') {
      // Ended meanwhile (a job added again for a delivery another run settled): its slot goes to the next in line, woken now.
      if (key) await this.follow(key, await this.giveBack(key, deliveryId, 'none', probe), null);
      return this.settled(job);
    }
    const number = delivery.attemptsMade + 1;
    const orderNo = typeof delivery.payload.order_no === 'string' ? delivery.payload.order_no : null;
    if (probe) this.logCircuit('half_open', job.data, orderNo, number);
    // send, decide
    const { outcome, ourSide, detail } = await this.send(delivery, number);
    this.metrics.attemptSeconds.observe({ outcome: outcome.ok ? 'success' : 'failure' }, outcome.durationMs / 1000);
    const verdict = this.policy.afterAttempt({ number, outcome, ourSide });
    // give: the slot back, and the circuit's transition as the gate stored it
    const released = key ? await this.giveBack(key, deliveryId, verdict.circuit, probe) : null;
    // record
    let recorded: RecordedAttempt;
    try {
      recorded = await this.attempts.record(this.finished(delivery, number, outcome, verdict, destination ?? '', released));
    } catch (err) {
      // Not stored (PostgreSQL away): the job fails this run and comes back. The slot is given back
      // and the gate admitted others in its place: they are woken all the same, or they would hold
      // the key's slots for nobody until their leases end.
      await this.follow(key, released, null);
      throw err;
    }
    this.logAttempt(job.data, orderNo, delivery, number, outcome, verdict, probe, detail);
    if (released?.transition) this.logCircuit(released.transition, job.data, orderNo, number, released.circuit.failures);
    // follow
    await this.follow(key, released, recorded);
    if (verdict.state === 'succeeded') {
      this.metrics.settled(merchantId, 'succeeded');
      return { deliveryId, status: 'succeeded', attempt: number };
    }
    if (verdict.state === 'failed') {
      this.metrics.settled(merchantId, 'failed');
      this.metrics.failedDeliveries.inc({ reason: verdict.reason });
      const why =
        verdict.reason === 'gone'
          ? 'HTTP 410, the merchant ended it'
          : verdict.reason === 'blocked'
            ? `its address was refused on ${number} attempts (${outcome.error})`
            : `attempt ${number} was the last`;
      throw new UnrecoverableError(`delivery ended: ${why}`);
    }
    throw new CallbackAttemptError(`attempt ${number} failed: ${outcome.error}`, verdict.retryInMs);
  }

  private finished(
    delivery: LoadedDelivery,
    number: number,
    outcome: SendOutcome,
    verdict: DeliveryVerdict,
    destination: string,
    released: GateRelease | null,
  ): FinishedAttempt {
    const circuit = released?.transition
      ? {
          transition: released.transition,
          failures: released.circuit.failures,
          nextProbeAt: released.circuit.nextProbeAt === null ? null : new Date(released.circuit.nextProbeAt),
        }
      : null;
    return {
      deliveryId: delivery.deliveryId,
      number,
      url: delivery.notifyUrl,
      httpStatus: outcome.httpStatus,
      durationMs: outcome.durationMs,
      responseExcerpt: outcome.excerpt,
      error: outcome.error,
      status: verdict.state,
      nextAttemptAt: verdict.state === 'pending' ? new Date(Date.now() + verdict.retryInMs) : null,
      destination,
      circuit,
    };
  }

  /** Not pending any more (sent, ended, no address, or gone): the job ends quietly, unless an operator pressed retry on it. */
  private async settled(job: CallbackJob): Promise<DeliveryResult> {
    // A failed job run again with its failure cleared: an operator pressed retry in Bull Board.
    if (job.attemptsMade > 0 && !job.failedReason) return this.resendForOperator(job);
    return { deliveryId: job.data.deliveryId, status: 'settled' };
  }

  /** SPEC 7 Durability: a retry pressed in Bull Board does what callbackResend does (same event_id, same hourly limit). */
  private async resendForOperator(job: CallbackJob): Promise<DeliveryResult> {
    const result = await this.portal.resendOrderOf(job.data.deliveryId, RESEND_LIMIT);
    if (result.kind === 'limited') throw new UnrecoverableError('not resent: this order had 10 resends within the hour (SPEC 7 callbackResend)');
    if (result.kind === 'not_found') throw new UnrecoverableError('not resent: the order has no callback event');
    await this.callbacks.deliver(result.deliveryId);
    this.logger.log({ delivery_id: job.data.deliveryId, resent_as: result.deliveryId }, 'operator retry in Bull Board: resent like callbackResend');
    return { deliveryId: result.deliveryId, status: 'resent' };
  }

  /**
   * Its key may not send it now (every slot busy, or the circuit open): parked without spending an
   * attempt, then lined up. Whoever frees a slot (or the probe time, for the key's one waker)
   * promotes it; a slot that freed meanwhile is taken by the line-up itself.
   */
  private async park(job: CallbackJob, token: string | undefined, key: GateKey, why: ParkReason): Promise<never> {
    const until = why.kind === 'held' && why.wakeAt !== null ? why.wakeAt : Date.now() + PARKED_JOB_DELAY_MS;
    await job.moveToDelayed(until, token);
    const [lined] = await this.gate.lineUp(key, [job.data.deliveryId], this.leaseMs);
    if (lined === 'run') await job.promote().catch(() => undefined);
    // Debug: a busy destination parks its jobs often; the attempt lines are the outcomes.
    this.logger.debug(
      { delivery_id: job.data.deliveryId, merchant_id: job.data.merchantId, destination: job.data.destination, status: 'parked', reason: why.kind },
      'callback job parked, no attempt spent',
    );
    throw new DelayedError();
  }

  /** The delivery could not be read (PostgreSQL away): nothing was sent, the job comes back shortly, no attempt spent. */
  private async retryLoad(job: CallbackJob, token: string | undefined, err: unknown): Promise<never> {
    this.logger.warn({ delivery_id: job.data.deliveryId, err: (err as Error)?.message ?? String(err) }, 'callback delivery not read, its job comes back');
    await job.moveToDelayed(Date.now() + this.tuning.callbackPollMs, token);
    throw new DelayedError();
  }

  /** Frees the slot; a failure is logged and the slot's lease frees it. */
  private async giveBack(key: GateKey, deliveryId: string, signal: DeliveryVerdict['circuit'], probe: boolean): Promise<GateRelease | null> {
    try {
      return await this.gate.give(key, deliveryId, signal, probe);
    } catch (err) {
      this.logger.warn(
        { delivery_id: deliveryId, merchant_id: key.merchantId, destination: key.destination, err: (err as Error).message },
        'callback slot not freed, its lease frees it',
      );
      return null;
    }
  }

  /** After the record: the deliveries the gate admitted are promoted, a new waker too, and the order's next delivery gets its job. */
  private async follow(key: GateKey | null, released: GateRelease | null, recorded: RecordedAttempt | null): Promise<void> {
    try {
      if (released) await this.callbacks.promoteDeliveries(key, [...released.admitted, ...(released.wake ? [released.wake] : [])]);
      if (recorded?.next) await this.callbacks.deliverHeads([recorded.next]);
    } catch (err) {
      // The rows say what is due: the sweep reconciles a job that was not woken or added.
      this.logger.warn({ next_delivery_id: recorded?.next?.id ?? null, err: (err as Error).message }, 'callback follow-up not done, the sweep covers it');
    }
  }

  /**
   * Signs and sends; `ourSide` when nothing reached the merchant because of us (the nonce store,
   * a secret that does not open): then the stored error is a fixed text and the exception's
   * message goes to the log only (`detail`).
   */
  private async send(delivery: LoadedDelivery, number: number): Promise<Sent> {
    if (!delivery.notifyUrl) return { outcome: notSent('no callback address: neither the order nor the merchant has a notify_url'), ourSide: true };
    let signed: ReturnType<typeof buildSignedCallback>;
    try {
      const nonce = await this.claimNonce(delivery.merchantApiKey).catch((err: unknown) => {
        throw new Error(`its nonce could not be recorded: ${(err as Error)?.message ?? String(err)}`);
      });
      const apiSecret = this.secretOf(delivery.merchantApiKey, delivery.merchantSecretEnc, merchantSecretContext(delivery.merchantApiKey));
      // During a rotation's grace the load hands over the previous secret too: webhook-signature carries both (SPEC 3).
      const previousApiSecret = delivery.merchantPreviousSecretEnc
        ? this.secretOf(delivery.merchantApiKey, delivery.merchantPreviousSecretEnc, previousMerchantSecretContext(delivery.merchantApiKey))
        : null;
      signed = buildSignedCallback(
        { id: delivery.eventId, type: delivery.eventType, payload: delivery.payload },
        { apiKey: delivery.merchantApiKey, apiSecret, previousApiSecret },
        number,
        nonce,
      );
    } catch (err) {
      return { outcome: notSent(INTERNAL_FAILURE_TEXT), ourSide: true, detail: (err as Error)?.message ?? String(err) };
    }
    return { outcome: await this.sender.send(delivery.notifyUrl, signed.body, signed.headers), ourSide: false };
  }

  /**
   * One JSON line per attempt (issue 29): ids as fields (order_no too, issue 37), the
   * merchant-facing reason, our own failure's detail as `err`; never the URL's path or query, a
   * body, a signature or a secret.
   */
  private logAttempt(
    data: JobPayloads['callback.deliver'],
    orderNo: string | null,
    delivery: LoadedDelivery,
    number: number,
    outcome: SendOutcome,
    verdict: DeliveryVerdict,
    probe: boolean,
    detail: string | undefined,
  ): void {
    const status: AttemptStatus = verdict.state === 'succeeded' ? 'succeeded' : verdict.state === 'pending' ? 'retry' : verdict.reason;
    const fields: Record<string, unknown> = {
      delivery_id: data.deliveryId,
      event_id: delivery.eventId,
      order_no: orderNo,
      merchant_id: data.merchantId,
      destination: data.destination,
      attempt: number,
      status,
      http_status: outcome.httpStatus,
      duration_ms: outcome.durationMs,
      reason: outcome.error,
    };
    if (verdict.state === 'pending') fields.next_attempt_at = new Date(Date.now() + verdict.retryInMs).toISOString();
    if (probe) fields.probe = true;
    if (detail !== undefined) fields.err = detail;
    if (status === 'succeeded') this.logger.log(fields, 'callback delivered');
    else if (status === 'retry')
      this.logger.log(fields, detail === undefined ? 'callback attempt failed, will retry' : 'callback not sent by our own fault, will retry');
    else this.logger.warn(fields, 'callback delivery ended');
  }

  private logCircuit(
    state: 'opened' | 'half_open' | 'closed' | 'probe_failed',
    data: JobPayloads['callback.deliver'],
    orderNo: string | null,
    attempt: number,
    failures?: number,
  ): void {
    const fields = {
      merchant_id: data.merchantId,
      destination: data.destination,
      circuit: state === 'probe_failed' ? 'still_open' : state,
      delivery_id: data.deliveryId,
      order_no: orderNo,
      attempt,
      ...(state === 'opened' && failures !== undefined ? { failures } : {}),
    };
    const message = {
      opened: 'callback circuit opened: deliveries to this destination wait for a probe',
      half_open: 'callback circuit half-open: sending a probe',
      closed: 'callback circuit closed: its held deliveries go now',
      probe_failed: 'callback circuit probe failed: it stays open',
    }[state];
    if (state === 'opened' || state === 'probe_failed') this.logger.warn(fields, message);
    else this.logger.log(fields, message);
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
