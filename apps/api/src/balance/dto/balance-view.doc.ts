import { ApiProperty } from '@nestjs/swagger';
import type { BalanceView } from '../balance.service';

/** balanceQuery's `data`, for the OpenAPI document only. */
export class BalanceViewDoc implements BalanceView {
  @ApiProperty({ type: 'integer', example: 9940, description: 'Available balance in fen (1/100 yuan): what refunds and payouts are taken from' })
  available_fen: number;

  @ApiProperty({ type: 'integer', example: 0, description: 'Deposit balance in fen, set aside at the merchant deposit rate' })
  deposit_fen: number;

  @ApiProperty({ type: 'integer', example: 1763700000, description: 'Unix seconds: when the balances were read' })
  as_of: number;
}
