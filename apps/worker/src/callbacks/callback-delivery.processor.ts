import { Injectable, Logger } from '@nestjs/common';
import { AppConfig, SecretBox, merchantSecretContext, previousMerchantSecretContext } from '@app/common';
import { type ClaimedAttempt, type FinishedAttempt, NonceStore } from '@app/db';
import { CallbackSender, DeliveryPolicy, type SendOutcome, buildSignedCallback, newCallbackNonce } from '@app/callbacks';

/** Decrypted secrets kept per ciphertext: a rotation writes a new ciphertext, so a stale entry is never read. */
const SECRET_CACHE_SIZE = 1000;

/**
 * One attempt of one claimed delivery: sign (a fresh nonce, claimed in the nonce store first),
 * send, and decide the delivery's next state from the outcome and the retry schedule. It never
 * throws: the dispatcher records what it returns.
 */
@Injectable()
export class CallbackDeliveryProcessor {
  private readonly logger = new Logger('CallbackDelivery');
  private readonly secretCache = new Map<string, string>();

  constructor(
    private readonly config: AppConfig,
    private readonly secrets: SecretBox,
    private readonly sender: CallbackSender,
    private readonly nonces: NonceStore,
  ) {
    this.policy = new DeliveryPolicy(config.callbackRetryScheduleMs);
  }

  private readonly policy: DeliveryPolicy;

  /** Every attempt a delivery gets: the first plus one per scheduled delay. */
  get maxAttempts(): number {
    return this.policy.maxAttempts;
  }

  async attempt(attempt: ClaimedAttempt): Promise<FinishedAttempt> {
    let outcome: SendOutcome;
    let countsForCircuit = true;
    if (!attempt.notifyUrl) {
      countsForCircuit = false;
      outcome = notSent('no callback address: neither the order nor the merchant has a notify_url');
    } else {
      try {
        outcome = await this.send(attempt, attempt.notifyUrl);
      } catch (err) {
        // Our side failed (the nonce store, the secret): nothing about the merchant's endpoint.
        countsForCircuit = false;
        outcome = notSent((err as Error).message);
      }
    }
    return this.finish(attempt, outcome, countsForCircuit);
  }

  private finish(attempt: ClaimedAttempt, outcome: SendOutcome, countsForCircuit: boolean): FinishedAttempt {
    const log = {
      deliveryId: attempt.deliveryId,
      number: attempt.number,
      url: attempt.notifyUrl,
      httpStatus: outcome.httpStatus,
      durationMs: outcome.durationMs,
      responseExcerpt: outcome.excerpt,
      error: outcome.error,
      countsForCircuit,
    };
    const verdict = this.policy.afterAttempt({ number: attempt.number, outcome, ourSide: !countsForCircuit });
    if (verdict.state === 'succeeded') return { ...log, status: 'succeeded', nextAttemptAt: null };
    if (verdict.state === 'failed') {
      this.logger.warn(`delivery ${attempt.deliveryId} failed for good after attempt ${attempt.number}: ${verdict.reason === 'gone' ? 'HTTP 410, the merchant ended it' : outcome.error}`);
      return { ...log, status: 'failed', nextAttemptAt: null };
    }
    return { ...log, status: 'pending', nextAttemptAt: new Date(Date.now() + verdict.retryInMs) };
  }

  private async send(attempt: ClaimedAttempt, url: string): Promise<SendOutcome> {
    let nonce: string;
    try {
      nonce = await this.claimNonce(attempt.merchantApiKey);
    } catch (err) {
      throw new Error(`not sent: its nonce could not be recorded (${(err as Error).message})`, { cause: err });
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
    return this.sender.send(url, body, headers);
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
