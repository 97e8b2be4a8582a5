import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsNotEmpty, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { IsHttpUrl, IsYuanAmount } from '../../orders/dto/param-validators';
import { emptyToUndefined, toNotifyUrl } from '../../orders/dto/param-transforms';
import { ruleMessage } from '../../http/rule-message';

export class RefundCreateDto {
  @ApiProperty({ example: '2025112112000012345678', description: 'A completed buy order of this merchant' })
  @IsString(ruleMessage('field.string', { field: 'order_no' }))
  @IsNotEmpty(ruleMessage('field.required', { field: 'order_no' }))
  @MaxLength(64, ruleMessage('field.maxLength', { field: 'order_no', max: 64 }))
  order_no: string;

  @ApiProperty({
    type: String,
    example: '30.00',
    description:
      "Yuan, > 0, at most 2 decimals; with the order's other refunds that have not failed, at most its cny_amount. Debited from the available balance at once (the service fee is not returned)",
  })
  @IsYuanAmount(ruleMessage('field.yuan', { field: 'refund_amount', example: '30.00' }))
  refund_amount: string | number;

  @ApiProperty({
    pattern: '^[A-Za-z0-9_-]{1,64}$',
    example: 'R-10001',
    description: 'Idempotency key: a repeat with the same parameters returns the first refund, with others 40900',
  })
  @IsString(ruleMessage('field.ownNumber', { field: 'merchant_refund_no' }))
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, ruleMessage('field.ownNumber', { field: 'merchant_refund_no' }))
  merchant_refund_no: string;

  @ApiPropertyOptional({ maxLength: 128, example: 'Customer returned the goods' })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString(ruleMessage('field.string', { field: 'reason' }))
  @MaxLength(128, ruleMessage('field.maxLength', { field: 'reason', max: 128 }))
  reason?: string;

  @ApiPropertyOptional({
    maxLength: 512,
    example: 'https://shop.example/refunds/notify',
    description: "Where refund.succeeded / refund.failed go; else the order's, else the merchant's callback address",
  })
  @Transform(toNotifyUrl)
  @IsOptional()
  @IsHttpUrl(ruleMessage('field.httpUrl', { field: 'notify_url' }))
  notify_url?: string;
}
