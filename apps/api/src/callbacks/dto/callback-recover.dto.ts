import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsInt, IsOptional, Max, Min } from 'class-validator';
import { emptyToUndefined, toInteger } from '../../orders/dto/param-transforms';
import { ruleMessage } from '../../http/rule-message';

export class CallbackRecoverDto {
  @ApiProperty({ example: 1763700000, description: 'Unix seconds; at most 7 days back. Deliveries that failed from then on are queued again.' })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsDefined(ruleMessage('field.required', { field: 'start_time' }))
  @IsInt(ruleMessage('field.integerUnixSeconds', { field: 'start_time' }))
  @Min(0, ruleMessage('field.integerUnixSeconds', { field: 'start_time' }))
  @Max(253402300799, ruleMessage('field.integerUnixSeconds', { field: 'start_time' }))
  start_time: number;

  @ApiPropertyOptional({ example: 1763786400, description: 'Unix seconds, not before start_time; now when absent' })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsInt(ruleMessage('field.integerUnixSeconds', { field: 'end_time' }))
  @Min(0, ruleMessage('field.integerUnixSeconds', { field: 'end_time' }))
  @Max(253402300799, ruleMessage('field.integerUnixSeconds', { field: 'end_time' }))
  end_time?: number;
}
