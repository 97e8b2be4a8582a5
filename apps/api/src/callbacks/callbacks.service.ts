import { Injectable } from '@nestjs/common';
import { DomainError, ErrorCode } from '@app/common';
import { CallbackDeliveryRepository, type ResendLimit } from '@app/db';
import { JobsAfterCommit } from '@app/orders';

export interface ResendView {
  event_id: string;
  event: string;
  delivery_id: string;
}

/** SPEC 7: a resend is a merchant's repair tool, not a way to make the worker flood an endpoint. */
export const RESEND_LIMIT: ResendLimit = { max: 10, windowSeconds: 3600 };

@Injectable()
export class CallbacksService {
  constructor(
    private readonly deliveries: CallbackDeliveryRepository,
    private readonly afterCommit: JobsAfterCommit,
  ) {}

  /**
   * SPEC 7 callbackResend: a new delivery of the order's latest event, same event_id; or the
   * delivery still pending, with nothing queued. The row is the queue: the wake-up only makes
   * the dispatchers take it at once.
   */
  async resend(merchantId: number, orderNo: string): Promise<{ view: ResendView; queued: boolean }> {
    const result = await this.deliveries.resendLatestEvent(merchantId, orderNo, RESEND_LIMIT);
    if (result.kind === 'not_found') throw new DomainError(ErrorCode.OrderNotFound);
    if (result.kind === 'limited') throw DomainError.rateLimited(result.retryAfterMs);
    if (result.kind === 'queued') await this.afterCommit.deliver(result.deliveryId);
    return { view: { event_id: result.eventId, event: result.event, delivery_id: result.deliveryId }, queued: result.kind === 'queued' };
  }
}
