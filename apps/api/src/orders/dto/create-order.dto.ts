import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { PAY_METHODS, type PayMethod } from '@app/db';
import { IsHttpUrl, IsYuanAmount } from './param-validators';
import { emptyToUndefined, toInteger, toNotifyUrl } from './param-transforms';
import { ruleMessage } from '../../http/rule-message';

export class CreateOrderDto {
  @ApiProperty({ enum: [1], example: 1, description: '1 = buy (top-up)' })
  @Transform(toInteger)
  @IsIn([1], ruleMessage('order_type.buyOnly'))
  order_type: number;

  @ApiProperty({ type: String, example: '100.00', description: 'Yuan, > 0, at most 2 decimals, within the channel limits; send as a string' })
  @IsYuanAmount(ruleMessage('field.yuan', { field: 'cny_amount', example: '100.00' }))
  cny_amount: string | number;

  @ApiProperty({ example: 3, description: 'A channel id from getPayChannels' })
  @Transform(toInteger)
  @IsInt(ruleMessage('field.integer', { field: 'paychannel_id' }))
  @Min(1, ruleMessage('field.atLeast', { field: 'paychannel_id', min: 1 }))
  @Max(2147483647, ruleMessage('field.outOfRange', { field: 'paychannel_id' }))
  paychannel_id: number;

  @ApiProperty({ enum: PAY_METHODS, example: 'alipay' })
  @IsIn(PAY_METHODS, ruleMessage('field.oneOf', { field: 'paychannel_paymethod', values: PAY_METHODS.join(', ') }))
  paychannel_paymethod: PayMethod;

  @ApiPropertyOptional({ maxLength: 64, example: '张三' })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString(ruleMessage('field.string', { field: 'customer_name' }))
  @MaxLength(64, ruleMessage('field.maxLength', { field: 'customer_name', max: 64 }))
  customer_name?: string;

  @ApiPropertyOptional({ maxLength: 512, example: 'https://shop.example/notify', description: "Overrides the merchant's callback address for this order" })
  @Transform(toNotifyUrl)
  @IsOptional()
  @IsHttpUrl(ruleMessage('field.httpUrl', { field: 'notify_url' }))
  notify_url?: string;

  @ApiPropertyOptional({
    maxLength: 128,
    example: '100 credits',
    description:
      'What the payer buys: shown on the pay page and sent to the channel (Alipay subject, WeChat description cut to 127 characters). Default: "Order {merchant_order_no or order_no}"',
  })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString(ruleMessage('field.string', { field: 'subject' }))
  @Matches(/^[^\p{Cc}]{1,128}$/u, ruleMessage('field.plainText', { field: 'subject', max: 128 }))
  subject?: string;

  @ApiPropertyOptional({
    maxLength: 512,
    example: 'https://shop.example/orders/M-10001',
    description:
      "Where the payer's browser goes after paying or giving up, from the pay page and the provider's own pages. Never proof of payment: the callback is.",
  })
  @Transform(toNotifyUrl)
  @IsOptional()
  @IsHttpUrl(ruleMessage('field.httpUrl', { field: 'return_url' }))
  return_url?: string;

  @ApiPropertyOptional({
    pattern: '^[A-Za-z0-9_-]{1,64}$',
    example: 'M-10001',
    description: 'Idempotency key: a repeat with the same parameters returns the first order, with others 40900',
  })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString(ruleMessage('field.ownNumber', { field: 'merchant_order_no' }))
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, ruleMessage('field.ownNumber', { field: 'merchant_order_no' }))
  merchant_order_no?: string;
}
