import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsOptional } from 'class-validator';
import { CHANNEL_CATEGORIES, type ChannelCategory } from '@app/db';
import { ruleMessage } from '../../http/rule-message';

export class GetPayChannelsDto {
  @ApiPropertyOptional({ enum: CHANNEL_CATEGORIES })
  // An empty category is left out of the signature, so it means "no filter" here too.
  @Transform(({ value }) => (value === '' ? undefined : value))
  @IsOptional()
  @IsIn(CHANNEL_CATEGORIES, ruleMessage('field.oneOf', { field: 'category', values: CHANNEL_CATEGORIES.join(', ') }))
  category?: ChannelCategory;
}
