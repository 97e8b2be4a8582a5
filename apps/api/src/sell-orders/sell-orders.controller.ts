import { Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { type Envelope, ErrorCode, apiMessage, ok } from '@app/common';
import type { Merchant } from '@app/db';
import { MerchantOperation } from '../http/api-docs';
import { CurrentMerchant, MerchantAuthGuard, MerchantParams } from '../auth/merchant-auth.guard';
import { CreateSellOrderDto } from './dto/create-sell-order.dto';
import { type CreatedSellOrderView, SellOrdersService } from './sell-orders.service';

@Controller('merchant')
@UseGuards(MerchantAuthGuard)
export class SellOrdersController {
  constructor(private readonly sellOrders: SellOrdersService) {}

  @Post('createSellOrder')
  @MerchantOperation(
    "Create a sell order: a payout to the merchant's customer",
    CreateSellOrderDto,
    'Debits cny_amount + service_amount from the available balance at once (40902 when too low) and answers the order pending (order_type 2, pay_url null, the payee account masked). The channel pays out: order.paid then order.completed; or it refuses: order.cancelled and the debit is given back. A channel without payouts (epay) is 40302.',
    [ErrorCode.ChannelUnavailable, ErrorCode.PayMethodUnavailable, ErrorCode.IdempotencyConflict, ErrorCode.InsufficientBalance],
  )
  @HttpCode(200)
  async createSellOrder(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: CreateSellOrderDto): Promise<Envelope<CreatedSellOrderView>> {
    const { order, repeat } = await this.sellOrders.create(merchant, params);
    return ok(order, apiMessage(repeat ? 'order.repeat' : 'sellOrder.created'));
  }
}
