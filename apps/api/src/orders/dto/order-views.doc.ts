import { ApiProperty } from '@nestjs/swagger';
import { ORDER_STATUSES, type OrderStatus } from '@app/db';
import type { CreatedOrderView, OrderView } from '../orders.service';

// The answers' `data` for the OpenAPI document only. Each class implements the view the service
// answers, so a field added to the view and not here does not compile.

const YUAN = { type: String, pattern: '^\\d{1,10}\\.\\d{2}$', description: 'Yuan as decimal text with two decimals' };
const FEN = { type: 'integer', description: 'Fen (1/100 yuan)' } as const;

/** An order as orderQueryList and orderQueryDetail show it. */
export class OrderViewDoc implements OrderView {
  @ApiProperty({ example: '2025112112000012345678', description: '22 digits' })
  order_no: string;

  @ApiProperty({ type: String, nullable: true, example: 'shop-20251121-0001', description: "The merchant's own order number given at creation, or null" })
  merchant_order_no: string | null;

  @ApiProperty({ enum: [1, 2], description: '1 = buy (top-up), 2 = sell (payout)' })
  order_type: number;

  @ApiProperty({ ...YUAN, example: '100.00' })
  cny_amount: string;

  @ApiProperty({ ...FEN, example: 9940, description: 'Fen credited to the merchant: cny - service - deposit' })
  merchant_actual_amount: number;

  @ApiProperty({ example: '0.00600000', description: 'Text with eight decimals' })
  service_rate: string;

  @ApiProperty({ ...FEN, example: 60 })
  service_amount: number;

  @ApiProperty({ enum: ORDER_STATUSES })
  status: OrderStatus;

  @ApiProperty({ type: 'integer', example: 1763700000, description: 'Unix seconds' })
  createtime: number;

  @ApiProperty({ type: 'integer', example: 1763700060, description: 'Unix seconds of the last transition' })
  updatetime: number;
}

/** orderQueryList's (and orderList's) page of orders. */
export class OrderListDoc {
  @ApiProperty({ type: [OrderViewDoc], description: 'Newest first' })
  list: OrderViewDoc[];

  @ApiProperty({ type: 'integer', description: 'Orders matching the filters, on every page' })
  total: number;

  @ApiProperty({ type: 'integer' })
  page: number;

  @ApiProperty({ type: 'integer' })
  limit: number;
}

/** createOrder's answer: the new order (or the first one, for a repeated merchant_order_no). */
export class CreatedOrderViewDoc implements CreatedOrderView {
  @ApiProperty({ example: '2025112112000012345678', description: '22 digits' })
  order_no: string;

  @ApiProperty({ type: String, nullable: true, example: 'M-10001' })
  merchant_order_no: string | null;

  @ApiProperty({ enum: ORDER_STATUSES, example: 'pending' })
  status: OrderStatus;

  @ApiProperty({ enum: [1, 2], example: 1 })
  order_type: number;

  @ApiProperty({ ...YUAN, example: '100.00' })
  cny_amount: string;

  @ApiProperty({ type: String, nullable: true, example: 'alipay' })
  payment_method: string | null;

  @ApiProperty({ ...YUAN, example: '99.40', description: 'Yuan after the service fee: (cny - service) / 100' })
  merchant_amount: string;

  @ApiProperty({ ...FEN, example: 0 })
  deposit_amount: number;

  @ApiProperty({ ...FEN, example: 60 })
  service_amount: number;

  @ApiProperty({ ...FEN, example: 9940 })
  merchant_actual_amount: number;

  @ApiProperty({ type: 'integer', example: 1763700000, description: 'Unix seconds' })
  createtime: number;

  @ApiProperty({
    type: String,
    nullable: true,
    example: 'https://pay.example/pay/2025112112000012345678?token=...',
    description:
      "Where to send the customer to pay. For alipay and wechatpay channels the service's own cashier, which sends each device down the flow it can finish",
  })
  pay_url: string | null;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    example: 1763701800,
    description: 'Unix seconds after which the order can no longer be paid (it is then cancelled); null for a sell order',
  })
  expires_at: number | null;
}
