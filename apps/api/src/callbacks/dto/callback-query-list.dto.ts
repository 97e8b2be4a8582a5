import { ApiProperty } from '@nestjs/swagger';
import { IsNotEmpty, IsString, MaxLength } from 'class-validator';

export class CallbackQueryListDto {
  @ApiProperty({ example: '2025112112000012345678' })
  @IsString({ message: 'order_no must be a string' })
  @IsNotEmpty({ message: 'order_no is required' })
  @MaxLength(64, { message: 'order_no must be at most 64 characters' })
  order_no: string;
}
