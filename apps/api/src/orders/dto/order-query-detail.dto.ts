import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { DomainError, apiMessage } from '@app/common';
import { emptyToUndefined } from './param-transforms';
import { ruleMessage } from '../../http/rule-message';

/** One order by exactly one of its two numbers (SPEC 5): the service's order_no or the merchant's own merchant_order_no. */
export class OrderQueryDetailDto {
  @ApiPropertyOptional({
    example: '2025112112000012345678',
    description: "The service's order number; or send merchant_order_no instead (exactly one of the two)",
  })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString(ruleMessage('field.string', { field: 'order_no' }))
  @MaxLength(64, ruleMessage('field.maxLength', { field: 'order_no', max: 64 }))
  order_no?: string;

  @ApiPropertyOptional({
    pattern: '^[A-Za-z0-9_-]{1,64}$',
    example: 'M-10001',
    description: 'The merchant_order_no given at createOrder or createSellOrder; or send order_no instead',
  })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString(ruleMessage('field.ownNumber', { field: 'merchant_order_no' }))
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, ruleMessage('field.ownNumber', { field: 'merchant_order_no' }))
  merchant_order_no?: string;
}

/** Which number names the order: exactly one of the two, else 40000. */
export type OrderKey = { orderNo: string } | { merchantOrderNo: string };

export function orderKey(params: OrderQueryDetailDto): OrderKey {
  if (params.order_no !== undefined && params.merchant_order_no !== undefined) {
    throw DomainError.invalid('order_no', apiMessage('orderKey.both'));
  }
  if (params.order_no !== undefined) return { orderNo: params.order_no };
  if (params.merchant_order_no !== undefined) return { merchantOrderNo: params.merchant_order_no };
  throw DomainError.invalid('order_no', apiMessage('orderKey.none'));
}
