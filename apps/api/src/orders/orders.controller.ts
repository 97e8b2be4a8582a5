import { Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { type Envelope, ErrorCode, apiMessage, ok } from '@app/common';
import type { Merchant } from '@app/db';
import { MerchantOperation } from '../http/api-docs';
import { CurrentMerchant, MerchantAuthGuard, MerchantParams } from '../auth/merchant-auth.guard';
import { CreateOrderDto } from './dto/create-order.dto';
import { OrderCloseDto } from './dto/order-close.dto';
import { OrderQueryDetailDto, orderKey } from './dto/order-query-detail.dto';
import { OrderQueryListDto } from './dto/order-query-list.dto';
import { CreatedOrderViewDoc, OrderListDoc, OrderViewDoc } from './dto/order-views.doc';
import { type CreatedOrderView, type OrderView, OrdersService } from './orders.service';

@Controller('merchant')
@UseGuards(MerchantAuthGuard)
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Post('createOrder')
  @MerchantOperation(
    'Create a buy (top-up) order',
    CreateOrderDto,
    'Answers the order with its pay_url; the customer pays there and the merchant gets callbacks.',
    [ErrorCode.ChannelUnavailable, ErrorCode.PayMethodUnavailable, ErrorCode.IdempotencyConflict, ErrorCode.ChannelFailed],
    CreatedOrderViewDoc,
  )
  @HttpCode(200)
  async createOrder(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: CreateOrderDto): Promise<Envelope<CreatedOrderView>> {
    const { order, repeat } = await this.orders.create(merchant, params);
    return ok(order, apiMessage(repeat ? 'order.repeat' : 'order.created'));
  }

  @Post('orderQueryList')
  @MerchantOperation("List the merchant's orders, newest first", OrderQueryListDto, '', [], OrderListDoc)
  @HttpCode(200)
  async orderQueryList(
    @CurrentMerchant() merchant: Merchant,
    @MerchantParams() params: OrderQueryListDto,
  ): Promise<Envelope<{ list: OrderView[]; total: number; page: number; limit: number }>> {
    return ok(await this.orders.list(merchant.id, params));
  }

  @Post('orderQueryDetail')
  @MerchantOperation(
    'Read one order by order_no or by merchant_order_no',
    OrderQueryDetailDto,
    "Exactly one of order_no and merchant_order_no (neither or both: 40000); an unknown order or another merchant's: 40400.",
    [ErrorCode.OrderNotFound],
    OrderViewDoc,
  )
  @HttpCode(200)
  async orderQueryDetail(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: OrderQueryDetailDto): Promise<Envelope<OrderView>> {
    return ok(await this.orders.detail(merchant.id, orderKey(params)));
  }

  @Post('orderClose')
  @MerchantOperation(
    'Close a pending buy order',
    OrderCloseDto,
    'pending -> cancelled (callback order.cancelled, reason "closed"); the channel is told where its protocol allows. An order already cancelled answers code 1 with the order; any other state 40901. A payment the channel reports after the close still counts (a late payment).',
    [ErrorCode.OrderNotFound, ErrorCode.StateConflict],
  )
  @HttpCode(200)
  async orderClose(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: OrderCloseDto): Promise<Envelope<OrderView>> {
    const { order, closed } = await this.orders.close(merchant.id, params.order_no);
    return ok(order, apiMessage(closed ? 'order.closed' : 'order.alreadyCancelled'));
  }
}
