import { Injectable } from '@nestjs/common';
import { DomainError, apiMessage } from '@app/common';
import { type Balances, type StatementCursor, type StatementEntry, StatementRepository } from '@app/db';
import { shanghaiDate, shanghaiDayBounds } from '@app/recon';

/** One movement of a statement, with the balances after it. */
export interface StatementMovement extends StatementEntry {
  availableAfterFen: number;
  depositAfterFen: number;
}

/** A merchant's day: the balances before it, one page of its movements in order, the balances after it. */
export interface Statement {
  date: string;
  opening: Balances;
  closing: Balances;
  movements: StatementMovement[];
  /** Every movement of the day, all pages. */
  total: number;
  page: number;
  limit: number;
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
    account: string;
    amount_fen: number;
    order_no: string;
    merchant_order_no: string | null;
    refund_no: string | null;
    available_after_fen: number;
    deposit_after_fen: number;
  }[];
  total: number;
  page: number;
  limit: number;
}

/** How many movements the CSV reads at a time: its memory, whatever the day's size. */
const CSV_BATCH = 1000;

/** The balances after each of `entries`, starting from `running`. */
function withBalances(entries: StatementEntry[], running: Balances): StatementMovement[] {
  const after = { ...running };
  return entries.map((e) => {
    after[e.account] += e.amountFen;
    return { ...e, availableAfterFen: after.available, depositAfterFen: after.deposit };
  });
}

/**
 * The merchant's statement of an Asia/Shanghai day (SPEC 6 Reconciliation, Merchant), for the
 * signed statementQuery and the portal's statements page alike: the balances before the day
 * (kept per closed day, so the cost does not grow with the merchant's history), one page of the
 * movements with the balances after each, the balances after the day. One day's closing is the
 * next day's opening by construction. A day after today is refused (40000).
 */
@Injectable()
export class StatementsService {
  constructor(private readonly statements: StatementRepository) {}

  async statement(merchantId: number, date: string, page = 1, limit = 100): Promise<Statement> {
    this.checkDay(date);
    const figures = await this.statements.dayFigures(merchantId, date);
    const offset = (page - 1) * limit;
    let movements: StatementMovement[] = [];
    if (offset < figures.movements) {
      const [before, entries] = await Promise.all([
        this.statements.movedBefore(merchantId, date, offset),
        this.statements.page(merchantId, date, offset, limit),
      ]);
      movements = withBalances(entries, { available: figures.opening.available + before.available, deposit: figures.opening.deposit + before.deposit });
    }
    return { date, opening: figures.opening, closing: figures.closing, movements, total: figures.movements, page, limit };
  }

  /**
   * The whole day for the CSV, a batch at a time: first the day's balances, then every movement
   * with the balances after it, read in keyset batches so memory stays one batch whatever the day.
   */
  async *export(
    merchantId: number,
    date: string,
  ): AsyncGenerator<{ figures: Pick<Statement, 'opening' | 'closing' | 'total'> } | { movements: StatementMovement[] }> {
    this.checkDay(date);
    const figures = await this.statements.dayFigures(merchantId, date);
    yield { figures: { opening: figures.opening, closing: figures.closing, total: figures.movements } };
    let running = { ...figures.opening };
    let after: StatementCursor | null = null;
    for (;;) {
      const entries = await this.statements.batchAfter(merchantId, date, after, CSV_BATCH);
      if (entries.length === 0) return;
      const movements = withBalances(entries, running);
      const last = movements[movements.length - 1];
      running = { available: last.availableAfterFen, deposit: last.depositAfterFen };
      after = { createdAt: last.createdAt, id: last.id };
      yield { movements };
      if (entries.length < CSV_BATCH) return;
    }
  }

  async view(merchantId: number, date: string, page: number, limit: number): Promise<StatementView> {
    const s = await this.statement(merchantId, date, page, limit);
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
      total: s.total,
      page: s.page,
      limit: s.limit,
    };
  }

  /** A day that exists and is not after today in Asia/Shanghai (SPEC 6), else 40000 naming `date`. */
  private checkDay(date: string): void {
    if (!shanghaiDayBounds(date)) throw DomainError.invalid('date', apiMessage('field.existingDate'));
    if (date > shanghaiDate(new Date())) throw DomainError.invalid('date', apiMessage('field.notAfterToday'));
  }
}
