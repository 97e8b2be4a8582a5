import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional } from 'class-validator';
import { toNotifyUrl } from '../../orders/dto/param-transforms';
import { IsHttpUrl } from '../../orders/dto/param-validators';

export class CallbackTestDto {
  @ApiPropertyOptional({ example: 'https://shop.example.com/pay/notify', description: "Where to send the test event; the merchant's notify URL when absent" })
  @Transform(toNotifyUrl)
  @IsOptional()
  @IsHttpUrl({ message: 'url must be an absolute http or https URL without userinfo or backslash, of at most 512 characters' })
  url?: string;
}
