import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsInt, IsOptional, Max, Min } from 'class-validator';
import { emptyToUndefined, toInteger } from '../../orders/dto/param-transforms';

export class CallbackRecoverDto {
  @ApiProperty({ example: 1763700000, description: 'Unix seconds; at most 7 days back. Deliveries that failed from then on are queued again.' })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsDefined({ message: 'start_time is required' })
  @IsInt({ message: 'start_time must be integer Unix seconds' })
  @Min(0, { message: 'start_time must be integer Unix seconds' })
  @Max(253402300799, { message: 'start_time must be integer Unix seconds' })
  start_time: number;

  @ApiPropertyOptional({ example: 1763786400, description: 'Unix seconds, not before start_time; now when absent' })
  @Transform((p) => toInteger({ value: emptyToUndefined(p) }))
  @IsOptional()
  @IsInt({ message: 'end_time must be integer Unix seconds' })
  @Min(0, { message: 'end_time must be integer Unix seconds' })
  @Max(253402300799, { message: 'end_time must be integer Unix seconds' })
  end_time?: number;
}
