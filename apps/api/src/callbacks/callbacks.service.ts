import { Injectable, Logger } from '@nestjs/common';
import { DomainError, ErrorCode } from '@app/common';
import { CallbackDeliveryRepository, type ResendLimit } from '@app/db';
import { JobQueue } from '@app/queue';

export interface ResendView {
  event_id: string;
  event: string;
  delivery_id: string;
}

/** SPEC 7: a resend is a merchant's repair tool, not a way to make the worker flood an endpoint. */
export const RESEND_LIMIT: ResendLimit = { max: 10, windowSeconds: 3600 };

@Injectable()
export class CallbacksService {
  private readonly logger = new Logger('Callbacks');

  constructor(
    private readonly deliveries: CallbackDeliveryRepository,
    private readonly jobs: JobQueue,
  ) {}

  /**
   * SPEC 7 callbackResend: a new delivery of the order's latest event, same event_id; or the
   * delivery still pending, with nothing queued. The row is the truth: if the enqueue fails the
   * sweeper sends it, so the merchant still gets an answer.
   */
  async resend(merchantId: number, orderNo: string): Promise<{ view: ResendView; queued: boolean }> {
    const result = await this.deliveries.resendLatestEvent(merchantId, orderNo, RESEND_LIMIT);
    if (result.kind === 'not_found') throw new DomainError(ErrorCode.OrderNotFound);
    if (result.kind === 'limited') throw DomainError.rateLimited(result.retryAfterMs);
    if (result.kind === 'queued') {
      try {
        await this.jobs.add('callback.deliver', { deliveryId: result.deliveryId }, { jobId: result.deliveryId });
      } catch (err) {
        this.logger.error(`enqueue callback.deliver ${result.deliveryId} failed, the sweeper will send it: ${(err as Error).message}`);
      }
    }
    return { view: { event_id: result.eventId, event: result.event, delivery_id: result.deliveryId }, queued: result.kind === 'queued' };
  }
}
