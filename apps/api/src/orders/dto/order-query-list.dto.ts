import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';
import { ORDER_STATUSES, type OrderStatus } from '@app/db';
import { emptyToUndefined, toInteger } from './param-transforms';

const integer = (field: string) => ({ message: `${field} must be an integer` });

export class OrderQueryListDto {
  @ApiPropertyOptional({ default: 1, minimum: 1 })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsInt(integer('page'))
  @Min(1, { message: 'page must be at least 1' })
  @Max(1_000_000, { message: 'page must be at most 1000000' })
  page: number = 1;

  @ApiPropertyOptional({ default: 20, minimum: 1, maximum: 100 })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsInt(integer('limit'))
  @Min(1, { message: 'limit must be from 1 to 100' })
  @Max(100, { message: 'limit must be from 1 to 100' })
  limit: number = 20;

  @ApiPropertyOptional({ enum: ORDER_STATUSES })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsIn(ORDER_STATUSES, { message: `status must be one of ${ORDER_STATUSES.join(', ')}` })
  status?: OrderStatus;

  @ApiPropertyOptional({ enum: [1, 2], description: '1 = buy, 2 = sell' })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsIn([1, 2], { message: 'order_type must be 1 or 2' })
  order_type?: number;

  @ApiPropertyOptional({ description: 'Unix seconds, inclusive, on createtime' })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsInt(integer('start_time'))
  @Min(0, { message: 'start_time must be Unix seconds' })
  @Max(253402300799, { message: 'start_time must be Unix seconds' })
  start_time?: number;

  @ApiPropertyOptional({ description: 'Unix seconds, inclusive, on createtime' })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsInt(integer('end_time'))
  @Min(0, { message: 'end_time must be Unix seconds' })
  @Max(253402300799, { message: 'end_time must be Unix seconds' })
  end_time?: number;
}
