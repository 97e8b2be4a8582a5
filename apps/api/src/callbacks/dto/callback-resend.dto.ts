import { ApiProperty } from '@nestjs/swagger';
import { IsNotEmpty, IsString, MaxLength } from 'class-validator';
import { ruleMessage } from '../../http/rule-message';

export class CallbackResendDto {
  @ApiProperty({ example: '2025112112000012345678' })
  @IsString(ruleMessage('field.string', { field: 'order_no' }))
  @IsNotEmpty(ruleMessage('field.required', { field: 'order_no' }))
  @MaxLength(64, ruleMessage('field.maxLength', { field: 'order_no', max: 64 }))
  order_no: string;
}
