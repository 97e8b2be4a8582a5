import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';
import { ORDER_STATUSES, type OrderStatus } from '@app/db';
import { emptyToUndefined, toInteger } from './param-transforms';
import { ruleMessage } from '../../http/rule-message';

export class OrderQueryListDto {
  @ApiPropertyOptional({ default: 1, minimum: 1 })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsInt(ruleMessage('field.integer', { field: 'page' }))
  @Min(1, ruleMessage('field.atLeast', { field: 'page', min: 1 }))
  @Max(1_000_000, ruleMessage('field.atMost', { field: 'page', max: 1000000 }))
  page: number = 1;

  @ApiPropertyOptional({ default: 20, minimum: 1, maximum: 100 })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsInt(ruleMessage('field.integer', { field: 'limit' }))
  @Min(1, ruleMessage('field.between', { field: 'limit', min: 1, max: 100 }))
  @Max(100, ruleMessage('field.between', { field: 'limit', min: 1, max: 100 }))
  limit: number = 20;

  @ApiPropertyOptional({ enum: ORDER_STATUSES })
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsIn(ORDER_STATUSES, ruleMessage('field.oneOf', { field: 'status', values: ORDER_STATUSES.join(', ') }))
  status?: OrderStatus;

  @ApiPropertyOptional({ enum: [1, 2], description: '1 = buy, 2 = sell' })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsIn([1, 2], ruleMessage('field.eitherOf', { field: 'order_type', first: 1, second: 2 }))
  order_type?: number;

  @ApiPropertyOptional({ description: 'Unix seconds, inclusive, on createtime' })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsInt(ruleMessage('field.integer', { field: 'start_time' }))
  @Min(0, ruleMessage('field.unixSeconds', { field: 'start_time' }))
  @Max(253402300799, ruleMessage('field.unixSeconds', { field: 'start_time' }))
  start_time?: number;

  @ApiPropertyOptional({ description: 'Unix seconds, inclusive, on createtime' })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsInt(ruleMessage('field.integer', { field: 'end_time' }))
  @Min(0, ruleMessage('field.unixSeconds', { field: 'end_time' }))
  @Max(253402300799, ruleMessage('field.unixSeconds', { field: 'end_time' }))
  end_time?: number;
}
