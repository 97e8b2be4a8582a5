import { Injectable } from '@nestjs/common';
import { LedgerRepository, MerchantRepository } from '@app/db';
import { OperatorError } from './operator-error';
import { OperatorInputError } from './operator-input-error';

/** merchant:ledger's answer. */
export interface LedgerListing {
  merchant_id: number;
  entries: { id: string; kind: string; account: string; amount_fen: number; order_no: string; refund_no: string | null; created_at: string }[];
  /** Every entry of the merchant summed per balance (not only those listed). */
  totals: { available_fen: number; deposit_fen: number };
}

/** What an operator reads of a merchant's money: its balances and the ledger entries they sum. */
@Injectable()
export class MerchantLedgerService {
  constructor(
    private readonly merchants: MerchantRepository,
    private readonly ledger: LedgerRepository,
  ) {}

  async balance(id: number): Promise<{ available_fen: number; deposit_fen: number }> {
    if (!(await this.merchants.findById(id))) throw new OperatorError(`no merchant ${id}`);
    const balance = await this.ledger.balanceOf(id);
    return { available_fen: balance.availableFen, deposit_fen: balance.depositFen };
  }

  /**
   * The merchant's latest ledger entries, newest first (at most `limit`, 1 to 1000), and the sum of
   * all of them per balance: what merchant:balance must show.
   */
  async entries(id: number, limit: string | undefined): Promise<LedgerListing> {
    const count = limit === undefined ? 50 : Number(limit);
    if (!/^\d{1,4}$/.test(limit ?? '50') || count < 1 || count > 1000) throw new OperatorInputError('limit', 'must be an integer from 1 to 1000');
    if (!(await this.merchants.findById(id))) throw new OperatorError(`no merchant ${id}`);
    const [entries, totals] = await Promise.all([this.ledger.latest(id, count), this.ledger.totals(id)]);
    return {
      merchant_id: id,
      entries: entries.map((e) => ({
        id: e.id,
        kind: e.kind,
        account: e.account,
        amount_fen: e.amountFen,
        order_no: e.orderNo,
        refund_no: e.refundNo,
        created_at: e.createdAt.toISOString(),
      })),
      totals: { available_fen: totals.available, deposit_fen: totals.deposit },
    };
  }
}
