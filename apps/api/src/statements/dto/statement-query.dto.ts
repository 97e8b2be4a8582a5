import { ApiProperty } from '@nestjs/swagger';
import { IsNotEmpty, IsString, Matches } from 'class-validator';
import { ruleMessage } from '../../http/rule-message';

export class StatementQueryDto {
  @ApiProperty({ example: '2025-11-21', description: 'The day, YYYY-MM-DD in Asia/Shanghai' })
  @IsString(ruleMessage('field.string', { field: 'date' }))
  @IsNotEmpty(ruleMessage('field.required', { field: 'date' }))
  @Matches(/^\d{4}-\d{2}-\d{2}$/, ruleMessage('field.date', { field: 'date' }))
  date: string;
}
