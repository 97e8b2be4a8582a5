import { Injectable } from '@nestjs/common';
import { DomainError, apiMessage } from '@app/common';
import { type LedgerAccount, type StatementEntry, StatementRepository } from '@app/db';
import { shanghaiDayBounds } from '@app/recon';

/** One movement of a statement, with the balances after it. */
export interface StatementMovement extends StatementEntry {
  availableAfterFen: number;
  depositAfterFen: number;
}

/** A merchant's day: the balances before it, each movement in order, the balances after it. */
export interface Statement {
  date: string;
  opening: Record<LedgerAccount, number>;
  closing: Record<LedgerAccount, number>;
  movements: StatementMovement[];
}

/** statementQuery's answer (SPEC 6): fen integers, times as Unix seconds. */
export interface StatementView {
  date: string;
  timezone: 'Asia/Shanghai';
  opening_balance: { available_fen: number; deposit_fen: number };
  closing_balance: { available_fen: number; deposit_fen: number };
  movements: {
    entry_id: string;
    time: number;
    kind: string;
    account: LedgerAccount;
    amount_fen: number;
    order_no: string;
    merchant_order_no: string | null;
    refund_no: string | null;
    available_after_fen: number;
    deposit_after_fen: number;
  }[];
  total: number;
}

/**
 * The merchant's statement of an Asia/Shanghai day (SPEC 6 Reconciliation, Merchant), for the
 * signed statementQuery and the portal's statements page alike. The opening is the sum of every
 * earlier entry and the closing the opening plus the day's: one day's closing is the next day's
 * opening by construction.
 */
@Injectable()
export class StatementsService {
  constructor(private readonly statements: StatementRepository) {}

  async statement(merchantId: number, date: string): Promise<Statement> {
    const day = shanghaiDayBounds(date);
    if (!day) throw DomainError.invalid('date', apiMessage('field.existingDate'));
    const [opening, entries] = await Promise.all([
      this.statements.balancesBefore(merchantId, day.from),
      this.statements.entriesBetween(merchantId, day.from, day.to),
    ]);
    const running = { ...opening };
    const movements = entries.map((e) => {
      running[e.account] += e.amountFen;
      return { ...e, availableAfterFen: running.available, depositAfterFen: running.deposit };
    });
    return { date, opening, closing: running, movements };
  }

  async view(merchantId: number, date: string): Promise<StatementView> {
    const s = await this.statement(merchantId, date);
    return {
      date: s.date,
      timezone: 'Asia/Shanghai',
      opening_balance: { available_fen: s.opening.available, deposit_fen: s.opening.deposit },
      closing_balance: { available_fen: s.closing.available, deposit_fen: s.closing.deposit },
      movements: s.movements.map((m) => ({
        entry_id: m.id,
        time: Math.floor(m.createdAt.getTime() / 1000),
        kind: m.kind,
        account: m.account,
        amount_fen: m.amountFen,
        order_no: m.orderNo,
        merchant_order_no: m.merchantOrderNo,
        refund_no: m.refundNo,
        available_after_fen: m.availableAfterFen,
        deposit_after_fen: m.depositAfterFen,
      })),
      total: s.movements.length,
    };
  }
}
