import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsNotEmpty, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { IsHttpUrl, IsYuanAmount } from '../../orders/dto/param-validators';
import { emptyToUndefined, toNotifyUrl } from '../../orders/dto/param-transforms';

export class RefundCreateDto {
  @ApiProperty({ example: '2025112112000012345678', description: 'A completed buy order of this merchant' })
  @IsString({ message: 'order_no must be a string' })
  @IsNotEmpty({ message: 'order_no is required' })
  @MaxLength(64, { message: 'order_no must be at most 64 characters' })
  order_no: string;

  @ApiProperty({
    type: String,
    example: '30.00',
    description:
      "Yuan, > 0, at most 2 decimals; with the order's other refunds that have not failed, at most its cny_amount. Debited from the available balance at once (the service fee is not returned)",
  })
  @IsYuanAmount({ message: 'refund_amount must be a yuan amount greater than 0 with at most 2 decimals, like "30.00"' })
  refund_amount: string | number;

  @ApiProperty({
    pattern: '^[A-Za-z0-9_-]{1,64}$',
    example: 'R-10001',
    description: 'Idempotency key: a repeat with the same parameters returns the first refund, with others 40900',
  })
  @IsString({ message: 'merchant_refund_no must be 1 to 64 of A-Z a-z 0-9 _ -' })
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'merchant_refund_no must be 1 to 64 of A-Z a-z 0-9 _ -' })
  merchant_refund_no: string;

  @ApiPropertyOptional({ maxLength: 128, example: 'Customer returned the goods' })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString({ message: 'reason must be a string' })
  @MaxLength(128, { message: 'reason must be at most 128 characters' })
  reason?: string;

  @ApiPropertyOptional({
    maxLength: 512,
    example: 'https://shop.example/refunds/notify',
    description: "Where refund.succeeded / refund.failed go; else the order's, else the merchant's callback address",
  })
  @Transform(toNotifyUrl)
  @IsOptional()
  @IsHttpUrl({ message: 'notify_url must be an absolute http or https URL without userinfo or backslash, of at most 512 characters' })
  notify_url?: string;
}
