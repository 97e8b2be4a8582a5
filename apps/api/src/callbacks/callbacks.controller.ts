import { Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { type Envelope, ErrorCode, ok } from '@app/common';
import type { DeliveryView } from '@app/callbacks';
import type { Merchant } from '@app/db';
import { MerchantOperation } from '../http/api-docs';
import { CurrentMerchant, MerchantAuthGuard, MerchantParams } from '../auth/merchant-auth.guard';
import type { TestAttemptView } from '@app/callbacks';
import { CallbacksService, type ResendView } from './callbacks.service';
import { CallbackQueryListDto } from './dto/callback-query-list.dto';
import { CallbackRecoverDto } from './dto/callback-recover.dto';
import { CallbackResendDto } from './dto/callback-resend.dto';
import { CallbackTestDto } from './dto/callback-test.dto';

@Controller('merchant')
@UseGuards(MerchantAuthGuard)
export class CallbacksController {
  constructor(private readonly callbacks: CallbacksService) {}

  @Post('callbackResend')
  @MerchantOperation(
    "Send the order's latest callback event again (same event_id)",
    CallbackResendDto,
    'Answers `{event_id, event, delivery_id}`. While a delivery of that event is pending, answers it and queues nothing; 40400 for an order with no event yet; at most 10 resends per order per hour (42900 with Retry-After).',
    [ErrorCode.OrderNotFound],
  )
  @HttpCode(200)
  async callbackResend(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: CallbackResendDto): Promise<Envelope<ResendView>> {
    return ok((await this.callbacks.resend(merchant.id, params.order_no)).view);
  }

  @Post('callbackQueryList')
  @MerchantOperation(
    "An order's callback deliveries with every attempt, newest first",
    CallbackQueryListDto,
    "Answers `{list: [{delivery_id, event_id, event, url, status (pending|succeeded|failed|no_address), attempts: [{at (Unix seconds), http_status, duration_ms, error, response_excerpt (at most 256 characters)}]}], total}`; 40400 for an unknown order or another merchant's.",
    [ErrorCode.OrderNotFound],
  )
  @HttpCode(200)
  async callbackQueryList(
    @CurrentMerchant() merchant: Merchant,
    @MerchantParams() params: CallbackQueryListDto,
  ): Promise<Envelope<{ list: DeliveryView[]; total: number }>> {
    return ok(await this.callbacks.list(merchant.id, params.order_no));
  }

  @Post('callbackRecover')
  @MerchantOperation(
    'Queue again every event whose delivery failed in a window',
    CallbackRecoverDto,
    'A new delivery for every event whose delivery ended `failed` between start_time and end_time (default now), start_time at most 7 days back; events with a pending or a succeeded delivery are left alone. Answers `{queued: n}`. At most once per minute per merchant (42900 with Retry-After).',
  )
  @HttpCode(200)
  async callbackRecover(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: CallbackRecoverDto): Promise<Envelope<{ queued: number }>> {
    return ok(await this.callbacks.recover(merchant.id, params.start_time, params.end_time));
  }

  @Post('callbackTest')
  @MerchantOperation(
    'Send a signed webhook.test event now and answer the attempt',
    CallbackTestDto,
    "To `url`, else the merchant's notify URL (40000 when there is none); signed like every callback, under the same address rules (a private address is a failed attempt, not an error). One attempt, no retries. Answers `{url, http_status, duration_ms, success, error, response_excerpt, signed_with}`; `signed_with` says which secret signed the body and the `webhook-signature` header: during a rotation's grace `{body: previous, webhook_signature: [current, previous]}` (SPEC 3), else `{body: current, webhook_signature: [current]}`. At most 10 per minute per merchant (42900 with Retry-After).",
  )
  @HttpCode(200)
  async callbackTest(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: CallbackTestDto): Promise<Envelope<TestAttemptView>> {
    return ok(await this.callbacks.test(merchant, params.url));
  }
}
