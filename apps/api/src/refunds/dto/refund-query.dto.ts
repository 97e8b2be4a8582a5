import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { emptyToUndefined } from '../../orders/dto/param-transforms';
import { ruleMessage } from '../../http/rule-message';

/** One of the two numbers; with both, they must name the same refund. */
export class RefundQueryDto {
  @ApiPropertyOptional({ example: '2025112312000087654321', description: "The service's refund number (refundCreate's answer)" })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString(ruleMessage('field.string', { field: 'refund_no' }))
  @MaxLength(64, ruleMessage('field.maxLength', { field: 'refund_no', max: 64 }))
  refund_no?: string;

  @ApiPropertyOptional({ pattern: '^[A-Za-z0-9_-]{1,64}$', example: 'R-10001' })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString(ruleMessage('field.ownNumber', { field: 'merchant_refund_no' }))
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, ruleMessage('field.ownNumber', { field: 'merchant_refund_no' }))
  merchant_refund_no?: string;
}
