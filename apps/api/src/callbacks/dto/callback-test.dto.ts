import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional } from 'class-validator';
import { toNotifyUrl } from '../../orders/dto/param-transforms';
import { IsHttpUrl } from '../../orders/dto/param-validators';
import { ruleMessage } from '../../http/rule-message';

export class CallbackTestDto {
  @ApiPropertyOptional({ example: 'https://shop.example.com/pay/notify', description: "Where to send the test event; the merchant's notify URL when absent" })
  @Transform(toNotifyUrl)
  @IsOptional()
  @IsHttpUrl(ruleMessage('field.httpUrl', { field: 'url' }))
  url?: string;
}
