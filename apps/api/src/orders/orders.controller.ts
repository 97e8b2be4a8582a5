import { Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { type Envelope, ok } from '@app/common';
import type { Merchant } from '@app/db';
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
  @HttpCode(200)
  async createOrder(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: CreateOrderDto): Promise<Envelope<CreatedOrderView>> {
    const { order, repeat } = await this.orders.create(merchant, params);
    return ok(order, repeat ? 'Order already created with this merchant_order_no' : 'Order created');
  }

  @Post('orderQueryList')
  @HttpCode(200)
  async orderQueryList(
    @CurrentMerchant() merchant: Merchant,
    @MerchantParams() params: OrderQueryListDto,
  ): Promise<Envelope<{ list: OrderView[]; total: number; page: number; limit: number }>> {
    return ok(await this.orders.list(merchant.id, params));
  }

  @Post('orderQueryDetail')
  @HttpCode(200)
  async orderQueryDetail(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: OrderQueryDetailDto): Promise<Envelope<OrderView>> {
    return ok(await this.orders.detail(merchant.id, params.order_no));
  }
}
