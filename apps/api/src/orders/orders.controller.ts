import { Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { type Envelope, ok } from '@app/common';
import type { Merchant } from '@app/db';
import { MerchantOperation } from '../http/api-docs';
import { CurrentMerchant, MerchantAuthGuard, MerchantParams } from '../auth/merchant-auth.guard';
import { CreateOrderDto } from './dto/create-order.dto';
import { OrderQueryDetailDto } from './dto/order-query-detail.dto';
import { OrderQueryListDto } from './dto/order-query-list.dto';
import { type CreatedOrderView, type OrderView, OrdersService } from './orders.service';

@Controller('merchant')
@UseGuards(MerchantAuthGuard)
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Post('createOrder')
  @MerchantOperation('Create a buy (top-up) order', CreateOrderDto, 'Answers the order with its pay_url; the customer pays there and the merchant gets callbacks.')
  @HttpCode(200)
  async createOrder(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: CreateOrderDto): Promise<Envelope<CreatedOrderView>> {
    const { order, repeat } = await this.orders.create(merchant, params);
    return ok(order, repeat ? 'Order already created with this merchant_order_no' : 'Order created');
  }

  @Post('orderQueryList')
  @MerchantOperation('List the merchant\'s orders, newest first', OrderQueryListDto)
  @HttpCode(200)
  async orderQueryList(
    @CurrentMerchant() merchant: Merchant,
    @MerchantParams() params: OrderQueryListDto,
  ): Promise<Envelope<{ list: OrderView[]; total: number; page: number; limit: number }>> {
    return ok(await this.orders.list(merchant.id, params));
  }

  @Post('orderQueryDetail')
  @MerchantOperation('Read one order by order_no (40400 if unknown or another merchant\'s)', OrderQueryDetailDto)
  @HttpCode(200)
  async orderQueryDetail(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: OrderQueryDetailDto): Promise<Envelope<OrderView>> {
    return ok(await this.orders.detail(merchant.id, params.order_no));
  }
}
