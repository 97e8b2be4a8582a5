import { Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { type Envelope, ErrorCode, apiMessage, ok } from '@app/common';
import type { Merchant } from '@app/db';
import type { RefundView } from '@app/orders';
import { MerchantOperation } from '../http/api-docs';
import { CurrentMerchant, MerchantAuthGuard, MerchantParams } from '../auth/merchant-auth.guard';
import { RefundCreateDto } from './dto/refund-create.dto';
import { RefundQueryListDto } from './dto/refund-query-list.dto';
import { RefundQueryDto } from './dto/refund-query.dto';
import { RefundsService } from './refunds.service';

@Controller('merchant')
@UseGuards(MerchantAuthGuard)
export class RefundsController {
  constructor(private readonly refunds: RefundsService) {}

  @Post('refundCreate')
  @MerchantOperation(
    'Refund a completed buy order, wholly or in part',
    RefundCreateDto,
    'Answers the refund, processing; refund.succeeded or refund.failed follows as a callback. One refund in progress per order (40901); the refunds that have not failed stay within cny_amount (40000); the available balance is debited refund_amount at once (40902 when too low) and credited back if the refund fails.',
    [
      ErrorCode.OrderNotFound,
      ErrorCode.IdempotencyConflict,
      ErrorCode.StateConflict,
      ErrorCode.InsufficientBalance,
      ErrorCode.ChannelUnavailable,
      ErrorCode.PayMethodUnavailable,
    ],
  )
  @HttpCode(200)
  async refundCreate(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: RefundCreateDto): Promise<Envelope<RefundView>> {
    const { refund, repeat } = await this.refunds.create(merchant.id, params);
    return ok(refund, apiMessage(repeat ? 'refund.repeat' : 'refund.created'));
  }

  @Post('refundQuery')
  @MerchantOperation("Read one refund by refund_no or merchant_refund_no (40400 if unknown or another merchant's)", RefundQueryDto, '', [
    ErrorCode.OrderNotFound,
  ])
  @HttpCode(200)
  async refundQuery(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: RefundQueryDto): Promise<Envelope<RefundView>> {
    return ok(await this.refunds.query(merchant.id, params));
  }

  @Post('refundQueryList')
  @MerchantOperation("List an order's refunds, newest first", RefundQueryListDto, '', [ErrorCode.OrderNotFound])
  @HttpCode(200)
  async refundQueryList(
    @CurrentMerchant() merchant: Merchant,
    @MerchantParams() params: RefundQueryListDto,
  ): Promise<Envelope<{ list: RefundView[]; total: number }>> {
    return ok(await this.refunds.list(merchant.id, params.order_no));
  }
}
