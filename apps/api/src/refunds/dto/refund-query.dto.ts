import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { emptyToUndefined } from '../../orders/dto/param-transforms';

/** One of the two numbers; with both, they must name the same refund. */
export class RefundQueryDto {
  @ApiPropertyOptional({ example: '2025112312000087654321', description: "The service's refund number (refundCreate's answer)" })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString({ message: 'refund_no must be a string' })
  @MaxLength(64, { message: 'refund_no must be at most 64 characters' })
  refund_no?: string;

  @ApiPropertyOptional({ pattern: '^[A-Za-z0-9_-]{1,64}$', example: 'R-10001' })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString({ message: 'merchant_refund_no must be 1 to 64 of A-Z a-z 0-9 _ -' })
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'merchant_refund_no must be 1 to 64 of A-Z a-z 0-9 _ -' })
  merchant_refund_no?: string;
}
