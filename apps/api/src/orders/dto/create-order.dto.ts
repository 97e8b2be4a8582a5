import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { PAY_METHODS, type PayMethod } from '@app/db';
import { IsHttpUrl, IsYuanAmount } from './param-validators';
import { emptyToUndefined, toInteger, toNotifyUrl } from './param-transforms';

export class CreateOrderDto {
  @ApiProperty({ enum: [1], example: 1, description: '1 = buy (top-up)' })
  @Transform(toInteger)
  @IsIn([1], { message: 'order_type must be 1 (buy); createOrder makes buy orders only' })
  order_type: number;

  @ApiProperty({ type: String, example: '100.00', description: 'Yuan, > 0, at most 2 decimals, within the channel limits; send as a string' })
  @IsYuanAmount({ message: 'cny_amount must be a yuan amount greater than 0 with at most 2 decimals, like "100.00"' })
  cny_amount: string | number;

  @ApiProperty({ example: 3, description: 'A channel id from getPayChannels' })
  @Transform(toInteger)
  @IsInt({ message: 'paychannel_id must be an integer' })
  @Min(1, { message: 'paychannel_id must be at least 1' })
  @Max(2147483647, { message: 'paychannel_id is out of range' })
  paychannel_id: number;

  @ApiProperty({ enum: PAY_METHODS, example: 'alipay' })
  @IsIn(PAY_METHODS, { message: `paychannel_paymethod must be one of ${PAY_METHODS.join(', ')}` })
  paychannel_paymethod: PayMethod;

  @ApiPropertyOptional({ maxLength: 64, example: '张三' })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString({ message: 'customer_name must be a string' })
  @MaxLength(64, { message: 'customer_name must be at most 64 characters' })
  customer_name?: string;

  @ApiPropertyOptional({ maxLength: 512, example: 'https://shop.example/notify', description: "Overrides the merchant's callback address for this order" })
  @Transform(toNotifyUrl)
  @IsOptional()
  @IsHttpUrl({ message: 'notify_url must be an absolute http or https URL without userinfo or backslash, of at most 512 characters' })
  notify_url?: string;

  @ApiPropertyOptional({
    maxLength: 128,
    example: '100 credits',
    description:
      'What the payer buys: shown on the pay page and sent to the channel (Alipay subject, WeChat description cut to 127 characters). Default: "Order {merchant_order_no or order_no}"',
  })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString({ message: 'subject must be a string' })
  @Matches(/^[^\p{Cc}]{1,128}$/u, { message: 'subject must be at most 128 characters, none of them a control character' })
  subject?: string;

  @ApiPropertyOptional({
    maxLength: 512,
    example: 'https://shop.example/orders/M-10001',
    description:
      "Where the payer's browser goes after paying or giving up, from the pay page and the provider's own pages. Never proof of payment: the callback is.",
  })
  @Transform(toNotifyUrl)
  @IsOptional()
  @IsHttpUrl({ message: 'return_url must be an absolute http or https URL without userinfo or backslash, of at most 512 characters' })
  return_url?: string;

  @ApiPropertyOptional({
    pattern: '^[A-Za-z0-9_-]{1,64}$',
    example: 'M-10001',
    description: 'Idempotency key: a repeat with the same parameters returns the first order, with others 40900',
  })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString({ message: 'merchant_order_no must be 1 to 64 of A-Z a-z 0-9 _ -' })
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'merchant_order_no must be 1 to 64 of A-Z a-z 0-9 _ -' })
  merchant_order_no?: string;
}
