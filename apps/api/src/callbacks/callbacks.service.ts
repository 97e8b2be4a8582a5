import { Injectable, Logger } from '@nestjs/common';
import { DomainError, ErrorCode } from '@app/common';
import { CallbackDeliveryRepository } from '@app/db';
import { JobQueue } from '@app/queue';

export interface ResendView {
  event_id: string;
  event: string;
}

@Injectable()
export class CallbacksService {
  private readonly logger = new Logger('Callbacks');

  constructor(
    private readonly deliveries: CallbackDeliveryRepository,
    private readonly jobs: JobQueue,
  ) {}

  /**
   * SPEC 7 callbackResend: a new delivery of the order's latest event, same event_id. The row is
   * the truth: if the enqueue fails the sweeper sends it, so the merchant still gets an answer.
   */
  async resend(merchantId: number, orderNo: string): Promise<ResendView> {
    const event = await this.deliveries.findLatestEvent(merchantId, orderNo);
    if (!event) throw new DomainError(ErrorCode.OrderNotFound);
    const deliveryId = await this.deliveries.createDelivery(merchantId, event);
    try {
      await this.jobs.add('callback.deliver', { deliveryId }, { jobId: deliveryId });
    } catch (err) {
      this.logger.error(`enqueue callback.deliver ${deliveryId} failed, the sweeper will send it: ${(err as Error).message}`);
    }
    return { event_id: event.eventId, event: event.event };
  }
}
