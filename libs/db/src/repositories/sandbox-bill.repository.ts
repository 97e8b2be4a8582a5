import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { SandboxBillLine } from '../entities/sandbox-bill-line.entity';
import { preparedQuery } from '../prepared-query';

/** A line as the sandbox's bill shows it. */
export type SandboxBillEntry = Omit<SandboxBillLine, 'id' | 'channelId'>;

/**
 * The sandbox channel's books (SPEC 6 Reconciliation: "its own daily bill of what its page did"),
 * kept apart from ours so reconciling the sandbox compares two records, not one with itself.
 * A line is written once per subject: a second Pay of the same order records nothing.
 */
@Injectable()
export class SandboxBillRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async record(channelId: number, line: Omit<SandboxBillEntry, 'occurredAt' | 'feeFen'>): Promise<void> {
    // Prepared: every Pay writes one.
    await preparedQuery(
      this.dataSource,
      'sandbox_bill_record',
      `INSERT INTO "sandbox_bill_lines" ("channel_id", "kind", "trade_no", "order_no", "refund_no", "amount_fen")
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
      [channelId, line.kind, line.tradeNo, line.orderNo, line.refundNo, line.amountFen],
    );
  }

  /** What the page took for an order, or null when it took nothing. */
  async paid(channelId: number, orderNo: string): Promise<{ amountFen: number; tradeNo: string } | null> {
    const [row] = await this.dataSource.query<{ amount_fen: string; trade_no: string }[]>(
      `SELECT "amount_fen", "trade_no" FROM "sandbox_bill_lines" WHERE "channel_id" = $1 AND "kind" = 'pay' AND "order_no" = $2`,
      [channelId, orderNo],
    );
    return row ? { amountFen: Number(row.amount_fen), tradeNo: row.trade_no } : null;
  }

  /** The lines of [from, to), oldest first. */
  async between(channelId: number, from: Date, to: Date): Promise<SandboxBillEntry[]> {
    const rows = await this.dataSource.query<
      { kind: 'pay' | 'refund'; trade_no: string; order_no: string; refund_no: string | null; amount_fen: string; fee_fen: string; occurred_at: Date }[]
    >(
      `SELECT "kind", "trade_no", "order_no", "refund_no", "amount_fen", "fee_fen", "occurred_at" FROM "sandbox_bill_lines"
        WHERE "channel_id" = $1 AND "occurred_at" >= $2 AND "occurred_at" < $3 ORDER BY "occurred_at", "id"`,
      [channelId, from, to],
    );
    return rows.map((r) => ({
      kind: r.kind,
      tradeNo: r.trade_no,
      orderNo: r.order_no,
      refundNo: r.refund_no,
      amountFen: Number(r.amount_fen),
      feeFen: Number(r.fee_fen),
      occurredAt: r.occurred_at,
    }));
  }
}
