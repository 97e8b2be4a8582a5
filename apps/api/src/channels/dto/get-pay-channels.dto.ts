import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsOptional } from 'class-validator';
import { CHANNEL_CATEGORIES, type ChannelCategory } from '@app/db';

export class GetPayChannelsDto {
  @ApiPropertyOptional({ enum: CHANNEL_CATEGORIES })
  // An empty category is left out of the signature, so it means "no filter" here too.
  @Transform(({ value }) => (value === '' ? undefined : value))
  @IsOptional()
  @IsIn(CHANNEL_CATEGORIES, { message: `category must be one of ${CHANNEL_CATEGORIES.join(', ')}` })
  category?: ChannelCategory;
}
