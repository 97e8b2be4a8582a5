import { Injectable } from '@nestjs/common';
import { unixSeconds } from '@app/common';
import { LedgerRepository } from '@app/db';

/** balanceQuery's answer (SPEC 6): the balances now, in fen, and when they were read (Unix seconds). */
export interface BalanceView {
  available_fen: number;
  deposit_fen: number;
  as_of: number;
}

/** The merchant's balances as the ledger leaves them: today's statement closes on the same figures. */
@Injectable()
export class BalanceService {
  constructor(private readonly ledger: LedgerRepository) {}

  async view(merchantId: number): Promise<BalanceView> {
    const { availableFen, depositFen } = await this.ledger.balanceOf(merchantId);
    return { available_fen: availableFen, deposit_fen: depositFen, as_of: unixSeconds() };
  }
}
