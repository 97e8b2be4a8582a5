import { ApiProperty } from '@nestjs/swagger';
import { IsNotEmpty, IsString, Matches } from 'class-validator';

export class StatementQueryDto {
  @ApiProperty({ example: '2025-11-21', description: 'The day, YYYY-MM-DD in Asia/Shanghai' })
  @IsString({ message: 'date must be a string' })
  @IsNotEmpty({ message: 'date is required' })
  @Matches(/^\d{4}-\d{2}-\d{2}$/, { message: 'date must be YYYY-MM-DD' })
  date: string;
}
