import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { LEDGER_KINDS, type LedgerAccount, type LedgerKind } from '../entities';

export interface StatementEntry {
  id: string;
  kind: LedgerKind;
  account: LedgerAccount;
  amountFen: number;
  orderNo: string;
  merchantOrderNo: string | null;
  refundNo: string | null;
  createdAt: Date;
}

/**
 * A merchant's statement of one period (SPEC 6 Reconciliation, Merchant): the balances before it
 * (the sum of every earlier entry, so a day's closing is the next day's opening by construction)
 * and every entry within it. Every query takes the merchant id first.
 */
@Injectable()
export class StatementRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async balancesBefore(merchantId: number, at: Date): Promise<Record<LedgerAccount, number>> {
    const rows = await this.dataSource.query<{ kind: LedgerKind; total: string }[]>(
      `SELECT "kind", sum("amount_fen")::text AS "total" FROM "ledger_entries" WHERE "merchant_id" = $1 AND "created_at" < $2 GROUP BY "kind"`,
      [merchantId, at],
    );
    const totals: Record<LedgerAccount, number> = { available: 0, deposit: 0 };
    for (const row of rows) totals[LEDGER_KINDS[row.kind].account] += Number(row.total);
    return totals;
  }

  /** The entries of [from, to) that moved money, oldest first. */
  async entriesBetween(merchantId: number, from: Date, to: Date): Promise<StatementEntry[]> {
    const rows = await this.dataSource.query<
      { id: string; kind: LedgerKind; amount_fen: string; order_no: string; merchant_order_no: string | null; refund_no: string | null; created_at: Date }[]
    >(
      `SELECT l."id", l."kind", l."amount_fen", o."order_no", o."merchant_order_no", r."refund_no", l."created_at"
         FROM "ledger_entries" l
         JOIN "orders" o ON o."id" = l."order_id"
         LEFT JOIN "refunds" r ON r."id" = l."refund_id"
        WHERE l."merchant_id" = $1 AND l."created_at" >= $2 AND l."created_at" < $3 AND l."amount_fen" <> 0
        ORDER BY l."created_at", l."id"`,
      [merchantId, from, to],
    );
    return rows.map((r) => ({
      id: String(r.id),
      kind: r.kind,
      account: LEDGER_KINDS[r.kind].account,
      amountFen: Number(r.amount_fen),
      orderNo: r.order_no,
      merchantOrderNo: r.merchant_order_no,
      refundNo: r.refund_no,
      createdAt: r.created_at,
    }));
  }
}
