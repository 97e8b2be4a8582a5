import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { BANK_CARD_PATTERN } from '@app/common';
import { IsHttpUrl, IsYuanAmount } from '../../orders/dto/param-validators';
import { emptyToUndefined, toInteger, toNotifyUrl } from '../../orders/dto/param-transforms';
import { ruleMessage } from '../../http/rule-message';

/** Text a person typed: at least one visible character. */
const VISIBLE = /\S/;

export class CreateSellOrderDto {
  @ApiProperty({ type: String, example: '50.00', description: 'Yuan paid to the payee, > 0, at most 2 decimals, within the channel limits; send as a string' })
  @IsYuanAmount(ruleMessage('field.yuan', { field: 'cny_amount', example: '50.00' }))
  cny_amount: string | number;

  @ApiProperty({ example: 3, description: 'A channel id from getPayChannels whose adapter pays out (40302 otherwise)' })
  @Transform(toInteger)
  @IsInt(ruleMessage('field.integer', { field: 'paychannel_id' }))
  @Min(1, ruleMessage('field.atLeast', { field: 'paychannel_id', min: 1 }))
  @Max(2147483647, ruleMessage('field.outOfRange', { field: 'paychannel_id' }))
  paychannel_id: number;

  @ApiProperty({ maxLength: 64, example: '张三' })
  @IsString(ruleMessage('field.text1To64', { field: 'payee_name' }))
  @Matches(VISIBLE, ruleMessage('field.text1To64', { field: 'payee_name' }))
  @MaxLength(64, ruleMessage('field.text1To64', { field: 'payee_name' }))
  payee_name: string;

  @ApiProperty({
    pattern: BANK_CARD_PATTERN.source,
    example: '6222021234561234',
    description: 'Bank card number, 12 to 19 digits, as a string. Stored encrypted; every answer shows it masked (6222********1234)',
  })
  @IsString(ruleMessage('field.bankCard', { field: 'payee_account' }))
  @Matches(BANK_CARD_PATTERN, ruleMessage('field.bankCard', { field: 'payee_account' }))
  payee_account: string;

  @ApiProperty({ maxLength: 64, example: '中国工商银行' })
  @IsString(ruleMessage('field.text1To64', { field: 'payee_bank' }))
  @Matches(VISIBLE, ruleMessage('field.text1To64', { field: 'payee_bank' }))
  @MaxLength(64, ruleMessage('field.text1To64', { field: 'payee_bank' }))
  payee_bank: string;

  @ApiPropertyOptional({ maxLength: 512, example: 'https://shop.example/notify', description: "Overrides the merchant's callback address for this order" })
  @Transform(toNotifyUrl)
  @IsOptional()
  @IsHttpUrl(ruleMessage('field.httpUrl', { field: 'notify_url' }))
  notify_url?: string;

  @ApiPropertyOptional({
    pattern: '^[A-Za-z0-9_-]{1,64}$',
    example: 'P-10001',
    description: 'Idempotency key shared with createOrder: a repeat with the same parameters returns the first order, with others 40900',
  })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString(ruleMessage('field.ownNumber', { field: 'merchant_order_no' }))
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, ruleMessage('field.ownNumber', { field: 'merchant_order_no' }))
  merchant_order_no?: string;
}
