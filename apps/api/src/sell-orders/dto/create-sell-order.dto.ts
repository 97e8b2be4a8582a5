import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { BANK_CARD_PATTERN } from '@app/common';
import { IsHttpUrl, IsYuanAmount } from '../../orders/dto/param-validators';
import { emptyToUndefined, toInteger, toNotifyUrl } from '../../orders/dto/param-transforms';

/** Text a person typed: at least one visible character. */
const VISIBLE = /\S/;

export class CreateSellOrderDto {
  @ApiProperty({ type: String, example: '50.00', description: 'Yuan paid to the payee, > 0, at most 2 decimals, within the channel limits; send as a string' })
  @IsYuanAmount({ message: 'cny_amount must be a yuan amount greater than 0 with at most 2 decimals, like "50.00"' })
  cny_amount: string | number;

  @ApiProperty({ example: 3, description: 'A channel id from getPayChannels whose adapter pays out (40302 otherwise)' })
  @Transform(toInteger)
  @IsInt({ message: 'paychannel_id must be an integer' })
  @Min(1, { message: 'paychannel_id must be at least 1' })
  @Max(2147483647, { message: 'paychannel_id is out of range' })
  paychannel_id: number;

  @ApiProperty({ maxLength: 64, example: '张三' })
  @IsString({ message: 'payee_name must be a string of 1 to 64 characters' })
  @Matches(VISIBLE, { message: 'payee_name must be a string of 1 to 64 characters' })
  @MaxLength(64, { message: 'payee_name must be a string of 1 to 64 characters' })
  payee_name: string;

  @ApiProperty({
    pattern: BANK_CARD_PATTERN.source,
    example: '6222021234561234',
    description: 'Bank card number, 12 to 19 digits, as a string. Stored encrypted; every answer shows it masked (6222********1234)',
  })
  @IsString({ message: 'payee_account must be a bank card number of 12 to 19 digits, sent as a string' })
  @Matches(BANK_CARD_PATTERN, { message: 'payee_account must be a bank card number of 12 to 19 digits, sent as a string' })
  payee_account: string;

  @ApiProperty({ maxLength: 64, example: '中国工商银行' })
  @IsString({ message: 'payee_bank must be a string of 1 to 64 characters' })
  @Matches(VISIBLE, { message: 'payee_bank must be a string of 1 to 64 characters' })
  @MaxLength(64, { message: 'payee_bank must be a string of 1 to 64 characters' })
  payee_bank: string;

  @ApiPropertyOptional({ maxLength: 512, example: 'https://shop.example/notify', description: "Overrides the merchant's callback address for this order" })
  @Transform(toNotifyUrl)
  @IsOptional()
  @IsHttpUrl({ message: 'notify_url must be an absolute http or https URL without userinfo or backslash, of at most 512 characters' })
  notify_url?: string;

  @ApiPropertyOptional({
    pattern: '^[A-Za-z0-9_-]{1,64}$',
    example: 'P-10001',
    description: 'Idempotency key shared with createOrder: a repeat with the same parameters returns the first order, with others 40900',
  })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString({ message: 'merchant_order_no must be 1 to 64 of A-Z a-z 0-9 _ -' })
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'merchant_order_no must be 1 to 64 of A-Z a-z 0-9 _ -' })
  merchant_order_no?: string;
}
