import { randomUUID } from 'node:crypto';
import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { type ApiMessage, DomainError, ErrorCode, SecretBox, apiMessage, unixSeconds } from '@app/common';
import { CallbackDeliveryRepository, CallbackToolsRepository, type Merchant, NonceStore, type ToolAllowance } from '@app/db';
import {
  INTERNAL_FAILURE_TEST_TEXT,
  CallbackJobs,
  CallbackSender,
  type DeliveryView,
  RESEND_LIMIT,
  type TestAttemptView,
  TEST_EVENT_TYPE,
  buildSignedCallback,
  deliveryView,
  firstCharacters,
  newCallbackNonce,
  RECOVER_MAX_AGE_SECONDS,
  recoverWindow,
} from '@app/callbacks';
import { merchantSecrets } from '../auth/merchant-credentials-cache';

/** recoverWindow's refusal in words of the tables: which bound, and for start_time whether too old or ahead of now. */
function recoverWindowMessage(field: 'start_time' | 'end_time', startTime: number, now: number): ApiMessage {
  if (field === 'end_time') return apiMessage('callbackRecover.endBeforeStart');
  return startTime > now ? apiMessage('callbackRecover.future') : apiMessage('callbackRecover.tooOld', { since: now - RECOVER_MAX_AGE_SECONDS });
}

export interface ResendView {
  event_id: string;
  event: string;
  delivery_id: string;
}

/** SPEC 7: a resend is a merchant's repair tool, not a way to make the worker flood an endpoint. */
/** SPEC 7: callbackRecover at most once per minute per merchant. */
export const RECOVER_ALLOWANCE: ToolAllowance = { tool: 'recover', max: 1, windowSeconds: 60 };
/**
 * callbackTest sends from the API process and may hold a request for the 10 s timeout: ten a
 * minute per merchant is plenty to debug an endpoint and keeps the API from being a flood source.
 */
export const TEST_ALLOWANCE: ToolAllowance = { tool: 'test', max: 10, windowSeconds: 60 };

@Injectable()
export class CallbacksService implements OnApplicationShutdown {
  private readonly logger = new Logger('Callbacks');

  constructor(
    private readonly deliveries: CallbackDeliveryRepository,
    private readonly tools: CallbackToolsRepository,
    private readonly jobs: CallbackJobs,
    private readonly nonces: NonceStore,
    private readonly secretBox: SecretBox,
    private readonly sender: CallbackSender,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.sender.close();
  }

  /**
   * SPEC 7 callbackResend: a new delivery of the order's latest event, same event_id; or the
   * delivery still pending, with nothing queued. The row is the truth; its job is added after
   * commit (the sweep adds it if that fails).
   */
  async resend(merchantId: number, orderNo: string): Promise<{ view: ResendView; queued: boolean }> {
    const result = await this.deliveries.resendLatestEvent(merchantId, orderNo, RESEND_LIMIT);
    if (result.kind === 'not_found') throw new DomainError(ErrorCode.OrderNotFound);
    if (result.kind === 'limited') throw DomainError.rateLimited(result.retryAfterMs);
    if (result.kind === 'queued') await this.jobs.deliver(result.deliveryId);
    return { view: { event_id: result.eventId, event: result.event, delivery_id: result.deliveryId }, queued: result.kind === 'queued' };
  }

  /** SPEC 7 callbackQueryList: the order's deliveries, newest first, each with its attempts; 40400 for no such order of this merchant. */
  async list(merchantId: number, orderNo: string): Promise<{ list: DeliveryView[]; total: number }> {
    const deliveries = await this.tools.deliveriesOfOrder(merchantId, orderNo);
    if (!deliveries) throw new DomainError(ErrorCode.OrderNotFound);
    return { list: deliveries.map(deliveryView), total: deliveries.length };
  }

  /**
   * SPEC 7 callbackRecover: a new delivery for every event whose delivery failed in the window
   * (not those already pending again or delivered since), at most once a minute per merchant.
   */
  async recover(merchantId: number, startTime: number, endTime: number | undefined): Promise<{ queued: number }> {
    const now = unixSeconds();
    const window = recoverWindow(startTime, endTime, now);
    if ('field' in window) throw DomainError.invalid(window.field, recoverWindowMessage(window.field, startTime, now));
    const result = await this.tools.recoverFailed(merchantId, new Date(window.from * 1000), new Date(window.to * 1000 + 999), RECOVER_ALLOWANCE);
    if (result.kind === 'limited') throw DomainError.rateLimited(result.retryAfterMs);
    // The rows are the truth; their jobs are added after commit, one call for all of them.
    await this.jobs.deliver(result.deliveryIds);
    if (result.deliveryIds.length > 0) this.logger.log({ merchant_id: merchantId, queued: result.deliveryIds.length }, 'failed deliveries recovered');
    return { queued: result.deliveryIds.length };
  }

  /**
   * SPEC 7 callbackTest: a signed `webhook.test` event sent now from this process, under the
   * callbacks' safety rules (a refused address is a failed attempt in the answer), its nonce
   * claimed like every callback's (SPEC 3), no retries, nothing stored but the allowance.
   */
  async test(merchant: Merchant, url: string | undefined): Promise<TestAttemptView> {
    const target = url ?? merchant.notifyUrl;
    if (!target) throw DomainError.invalid('url', apiMessage('callbackTest.urlRequired'));
    const allowance = await this.tools.takeAllowance(merchant.id, TEST_ALLOWANCE);
    if (!allowance.allowed) throw DomainError.rateLimited(allowance.retryAfterMs);

    const now = Date.now();
    const [current, previous] = merchantSecrets(this.secretBox, merchant).filter((s) => s.untilMs === null || s.untilMs > now);
    const answer = (outcome: {
      ok: boolean;
      httpStatus: number | null;
      durationMs: number;
      error: string | null;
      excerpt: string | null;
    }): TestAttemptView => ({
      url: target,
      http_status: outcome.httpStatus,
      duration_ms: outcome.durationMs,
      success: outcome.ok,
      error: outcome.error,
      response_excerpt: firstCharacters(outcome.excerpt),
      signed_with: previous ? { body: 'previous', webhook_signature: ['current', 'previous'] } : { body: 'current', webhook_signature: ['current'] },
    });
    const nonce = newCallbackNonce();
    try {
      if (!(await this.nonces.claim(merchant.apiKey, nonce))) throw new Error('a fresh random nonce was already used');
    } catch (err) {
      // The merchant reads a fixed text; the store's own error is ours to read, in the log (issue 29).
      this.logger.warn({ merchant_id: merchant.id, err: (err as Error)?.message ?? String(err) }, 'test callback not sent: its nonce could not be recorded');
      return answer({ ok: false, httpStatus: null, durationMs: 0, excerpt: null, error: INTERNAL_FAILURE_TEST_TEXT });
    }
    const { body, headers } = buildSignedCallback(
      { id: randomUUID(), type: TEST_EVENT_TYPE, payload: {} },
      { apiKey: merchant.apiKey, apiSecret: current.secret, previousApiSecret: previous?.secret ?? null },
      1,
      nonce,
      now,
    );
    return answer(await this.sender.send(target, body, headers));
  }
}
