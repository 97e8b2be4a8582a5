import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsNotEmpty, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import { emptyToUndefined, toInteger } from '../../orders/dto/param-transforms';

/** SPEC 6: a statement's movements come in pages of 1 to 500, 100 by default. */
export const STATEMENT_LIMIT = { default: 100, max: 500 } as const;

export class StatementQueryDto {
  @ApiProperty({ example: '2025-11-21', description: 'The day, YYYY-MM-DD in Asia/Shanghai; not after today' })
  @IsString({ message: 'date must be a string' })
  @IsNotEmpty({ message: 'date is required' })
  @Matches(/^\d{4}-\d{2}-\d{2}$/, { message: 'date must be YYYY-MM-DD' })
  date: string;

  @ApiPropertyOptional({ default: 1, minimum: 1, description: 'The page of the movements' })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsInt({ message: 'page must be an integer' })
  @Min(1, { message: 'page must be at least 1' })
  @Max(1_000_000, { message: 'page must be at most 1000000' })
  page: number = 1;

  @ApiPropertyOptional({ default: STATEMENT_LIMIT.default, minimum: 1, maximum: STATEMENT_LIMIT.max, description: 'Movements per page' })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsInt({ message: 'limit must be an integer' })
  @Min(1, { message: `limit must be from 1 to ${STATEMENT_LIMIT.max}` })
  @Max(STATEMENT_LIMIT.max, { message: `limit must be from 1 to ${STATEMENT_LIMIT.max}` })
  limit: number = STATEMENT_LIMIT.default;
}
