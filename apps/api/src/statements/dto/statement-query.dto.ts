import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsNotEmpty, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import { emptyToUndefined, toInteger } from '../../orders/dto/param-transforms';
import { ruleMessage } from '../../http/rule-message';

/** SPEC 6: a statement's movements come in pages of 1 to 500, 100 by default. */
export const STATEMENT_LIMIT = { default: 100, max: 500 } as const;

export class StatementQueryDto {
  @ApiProperty({ example: '2025-11-21', description: 'The day, YYYY-MM-DD in Asia/Shanghai; not after today' })
  @IsString(ruleMessage('field.string', { field: 'date' }))
  @IsNotEmpty(ruleMessage('field.required', { field: 'date' }))
  @Matches(/^\d{4}-\d{2}-\d{2}$/, ruleMessage('field.date', { field: 'date' }))
  date: string;

  @ApiPropertyOptional({ default: 1, minimum: 1, description: 'The page of the movements' })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsInt(ruleMessage('field.integer', { field: 'page' }))
  @Min(1, ruleMessage('field.atLeast', { field: 'page', min: 1 }))
  @Max(1_000_000, ruleMessage('field.atMost', { field: 'page', max: 1000000 }))
  page: number = 1;

  @ApiPropertyOptional({ default: STATEMENT_LIMIT.default, minimum: 1, maximum: STATEMENT_LIMIT.max, description: 'Movements per page' })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsInt(ruleMessage('field.integer', { field: 'limit' }))
  @Min(1, ruleMessage('field.between', { field: 'limit', min: 1, max: STATEMENT_LIMIT.max }))
  @Max(STATEMENT_LIMIT.max, ruleMessage('field.between', { field: 'limit', min: 1, max: STATEMENT_LIMIT.max }))
  limit: number = STATEMENT_LIMIT.default;
}
