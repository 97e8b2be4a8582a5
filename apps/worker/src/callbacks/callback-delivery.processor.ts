import { Injectable, Logger } from '@nestjs/common';
import { UnrecoverableError } from 'bullmq';
import { AppConfig, type JobPayloads, SecretBox, callbackAttemptsLimit, merchantSecretContext, previousMerchantSecretContext } from '@app/common';
import { type ClaimedAttempt, CallbackDeliveryRepository, NonceStore } from '@app/db';
import { buildSignedCallback, newCallbackNonce } from '@app/callbacks';
import { type SendOutcome, CallbackSender } from '@app/callbacks';
import { CallbackAttemptError, retryDelayMs } from '@app/callbacks';

/** How long a claimed attempt keeps the sweeper away: the HTTP budget plus the time to record it. */
const ATTEMPT_LEASE_MARGIN_MS = 30_000;

export interface DeliveryResult {
  deliveryId: string;
  attempt?: number;
  status: 'succeeded' | 'settled';
}

/**
 * One 'callback.deliver' job: one attempt of one delivery. The state (attempt number, status,
 * the log) lives in PostgreSQL; a failed attempt throws so BullMQ's retry and the custom backoff
 * schedule the next one, and the last, or a 410, ends the job with an UnrecoverableError.
 */
@Injectable()
export class CallbackDeliveryProcessor {
  private readonly logger = new Logger('CallbackDelivery');

  constructor(
    private readonly config: AppConfig,
    private readonly deliveries: CallbackDeliveryRepository,
    private readonly secrets: SecretBox,
    private readonly sender: CallbackSender,
    private readonly nonces: NonceStore,
  ) {}

  /** Every attempt a delivery gets: the first plus one per scheduled delay. */
  get maxAttempts(): number {
    return callbackAttemptsLimit(this.config.callbackRetryScheduleMs);
  }

  async deliver({ deliveryId }: JobPayloads['callback.deliver']): Promise<DeliveryResult> {
    const claim = await this.deliveries.claimAttempt(deliveryId, this.maxAttempts, this.sender.timeoutMs + ATTEMPT_LEASE_MARGIN_MS);
    if (claim.kind === 'exhausted') throw new UnrecoverableError(`delivery ${deliveryId}: no attempts left`);
    if (claim.kind === 'settled') return { deliveryId, status: 'settled' };
    const attempt = claim.attempt;
    const outcome = await this.attempt(attempt);

    if (outcome.ok) {
      await this.deliveries.recordAttempt(deliveryId, attempt.number, this.logRow(attempt, outcome), {
        status: 'succeeded',
        lastError: null,
        nextAttemptAt: null,
      });
      return { deliveryId, attempt: attempt.number, status: 'succeeded' };
    }

    const error = outcome.error ?? 'failed';
    const gone = outcome.httpStatus === 410;
    const last = attempt.number >= this.maxAttempts;
    if (gone || last) {
      await this.deliveries.recordAttempt(deliveryId, attempt.number, this.logRow(attempt, outcome), {
        status: 'failed',
        lastError: error,
        nextAttemptAt: null,
      });
      this.logger.warn(`delivery ${deliveryId} failed for good after attempt ${attempt.number}: ${error}`);
      throw new UnrecoverableError(gone ? `HTTP 410: the merchant ended this delivery` : `attempt ${attempt.number} was the last: ${error}`);
    }

    const delay = retryDelayMs(this.config.callbackRetryScheduleMs, attempt.number, outcome.retryAfterMs);
    await this.deliveries.recordAttempt(deliveryId, attempt.number, this.logRow(attempt, outcome), {
      status: 'pending',
      lastError: error,
      nextAttemptAt: new Date(Date.now() + delay),
    });
    throw new CallbackAttemptError(`attempt ${attempt.number} failed: ${error}`, attempt.number, delay);
  }

  private async attempt(attempt: ClaimedAttempt): Promise<SendOutcome> {
    if (!attempt.notifyUrl) {
      return {
        ok: false,
        httpStatus: null,
        durationMs: 0,
        excerpt: null,
        error: 'no callback address: neither the order nor the merchant has a notify_url',
        retryAfterMs: null,
      };
    }
    let nonce: string;
    try {
      nonce = await this.claimNonce(attempt.merchantApiKey);
    } catch (err) {
      return { ok: false, httpStatus: null, durationMs: 0, excerpt: null, error: `not sent: its nonce could not be recorded (${(err as Error).message})`, retryAfterMs: null };
    }
    const apiSecret = this.secrets.open(attempt.merchantSecretEnc, merchantSecretContext(attempt.merchantApiKey));
    const previousApiSecret = attempt.merchantPreviousSecretEnc && this.secrets.open(attempt.merchantPreviousSecretEnc, previousMerchantSecretContext(attempt.merchantApiKey));
    const { body, headers } = buildSignedCallback(
      { id: attempt.eventId, type: attempt.eventType, payload: attempt.payload },
      { apiKey: attempt.merchantApiKey, apiSecret, previousApiSecret },
      attempt.number,
      nonce,
    );
    return this.sender.send(attempt.notifyUrl, body, headers);
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

  private logRow(attempt: ClaimedAttempt, outcome: SendOutcome) {
    return {
      url: attempt.notifyUrl,
      httpStatus: outcome.httpStatus,
      durationMs: outcome.durationMs,
      responseExcerpt: outcome.excerpt,
      error: outcome.error,
    };
  }
}
