import { Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { type Envelope, ok } from '@app/common';
import type { Merchant } from '@app/db';
import { MerchantOperation } from '../http/api-docs';
import { CurrentMerchant, MerchantAuthGuard, MerchantParams } from '../auth/merchant-auth.guard';
import { CallbacksService, type ResendView } from './callbacks.service';
import { CallbackResendDto } from './dto/callback-resend.dto';

@Controller('merchant')
@UseGuards(MerchantAuthGuard)
export class CallbacksController {
  constructor(private readonly callbacks: CallbacksService) {}

  @Post('callbackResend')
  @MerchantOperation(
    'Send the order\'s latest callback event again (same event_id)',
    CallbackResendDto,
    'While a delivery of that event is pending, answers it and queues nothing; at most 10 resends per order per hour (42900 with Retry-After).',
  )
  @HttpCode(200)
  async callbackResend(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: CallbackResendDto): Promise<Envelope<ResendView>> {
    return ok((await this.callbacks.resend(merchant.id, params.order_no)).view);
  }
}
