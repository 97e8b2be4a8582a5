import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { MovementKind, ReconClass } from '../entities/recon-line.entity';

/** One of our records a bill line can be about: a top-up, or a refund of one. */
export interface OurMovement {
  kind: MovementKind;
  orderNo: string;
  refundNo: string | null;
  amountFen: number;
  status: string;
  /** Money moved (a paid, confirmed or completed top-up; a succeeded refund). */
  moved: boolean;
  /** It moved money on the day reconciled: a bill of that day must list it. */
  inDay: boolean;
}

export interface ReconLineRow {
  class: ReconClass;
  kind: MovementKind;
  orderNo: string | null;
  refundNo: string | null;
  channelTradeNo: string | null;
  billAmountFen: number | null;
  ourAmountFen: number | null;
  feeFen: number | null;
  ourStatus: string | null;
  billLineNo: number | null;
  billLine: string | null;
  note: string | null;
}

export interface ReconTotals {
  billTotalFen: number;
  ourTotalFen: number;
  feeFen: number;
  differenceFen: number;
  counts: Record<ReconClass, number>;
}

export interface NewReconRun {
  channelId: number;
  billDate: string;
  format: string;
  sha256: string;
  raw: Buffer;
  status: 'completed' | 'refused';
  error: string | null;
  totals: ReconTotals | null;
  lines: ReconLineRow[];
}

export interface ReconRunRow extends ReconTotals {
  id: string;
  channelId: number;
  billDate: string;
  status: 'completed' | 'refused';
  format: string;
  sha256: string;
  error: string | null;
  createdAt: Date;
}

export interface StoredReconLine extends ReconLineRow {
  id: string;
  resolution: string | null;
}

const PAID_STATES = `('paid', 'confirmed', 'completed')`;

interface RunRecord {
  id: string;
  channel_id: number;
  bill_date: string;
  status: 'completed' | 'refused';
  bill_format: string;
  bill_sha256: string;
  error: string | null;
  bill_total_fen: string;
  our_total_fen: string;
  fee_fen: string;
  difference_fen: string;
  counts: Record<ReconClass, number>;
  created_at: Date;
}

function runRow(r: RunRecord): ReconRunRow {
  return {
    id: String(r.id),
    channelId: r.channel_id,
    billDate: r.bill_date,
    status: r.status,
    format: r.bill_format,
    sha256: r.bill_sha256,
    error: r.error,
    billTotalFen: Number(r.bill_total_fen),
    ourTotalFen: Number(r.our_total_fen),
    feeFen: Number(r.fee_fen),
    differenceFen: Number(r.difference_fen),
    counts: r.counts,
    createdAt: r.created_at,
  };
}

const RUN_COLUMNS = `"id", "channel_id", to_char("bill_date", 'YYYY-MM-DD') AS "bill_date", "status", "bill_format", "bill_sha256", "error",
  "bill_total_fen", "our_total_fen", "fee_fen", "difference_fen", "counts", "created_at"`;

/** Reconciliation runs, their lines, and the movements of ours a run compares a bill with. */
@Injectable()
export class ReconRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * The channel's movements of [from, to) (top-ups paid then, refunds succeeded then), plus those
   * the bill names whatever their day or state, so a line about a pending order finds it.
   */
  async movements(channelId: number, from: Date, to: Date, orderNos: string[], refundNos: string[]): Promise<OurMovement[]> {
    const rows = await this.dataSource.query<
      { kind: MovementKind; order_no: string; refund_no: string | null; amount_fen: string; status: string; moved: boolean; in_day: boolean }[]
    >(
      `SELECT 'pay' AS "kind", o."order_no", NULL AS "refund_no", o."cny_fen" AS "amount_fen", o."status",
              o."status" IN ${PAID_STATES} AS "moved",
              (o."status" IN ${PAID_STATES} AND o."paid_at" >= $2 AND o."paid_at" < $3) AS "in_day"
         FROM "orders" o
        WHERE o."channel_id" = $1 AND o."order_type" = 1
          AND ((o."paid_at" >= $2 AND o."paid_at" < $3) OR o."order_no" = ANY($4::varchar[]))
       UNION ALL
       SELECT 'refund', r."order_no", r."refund_no", r."refund_fen", r."status",
              r."status" = 'succeeded',
              (r."status" = 'succeeded' AND r."updated_at" >= $2 AND r."updated_at" < $3)
         FROM "refunds" r JOIN "orders" o ON o."id" = r."order_id"
        WHERE o."channel_id" = $1
          AND ((r."status" = 'succeeded' AND r."updated_at" >= $2 AND r."updated_at" < $3) OR r."refund_no" = ANY($5::varchar[]))`,
      [channelId, from, to, orderNos, refundNos],
    );
    return rows.map((r) => ({
      kind: r.kind,
      orderNo: r.order_no,
      refundNo: r.refund_no,
      amountFen: Number(r.amount_fen),
      status: r.status,
      moved: r.moved,
      inDay: r.in_day,
    }));
  }

  /** The channels the daily run reconciles: every enabled one, by id. */
  async enabledChannels(): Promise<{ id: number; adapter: string }[]> {
    return this.dataSource.query(`SELECT "id", "adapter" FROM "channels" WHERE "enabled" ORDER BY "id"`);
  }

  /** The top-ups a channel without a bill (epay) is asked about: created or paid in [from, to). */
  async ordersOfDay(
    channelId: number,
    from: Date,
    to: Date,
  ): Promise<{ orderNo: string; amountFen: number; channelTradeNo: string | null; paidAt: Date | null }[]> {
    const rows = await this.dataSource.query<{ order_no: string; cny_fen: string; channel_trade_no: string | null; paid_at: Date | null }[]>(
      `SELECT "order_no", "cny_fen", "channel_trade_no", "paid_at" FROM "orders"
        WHERE "channel_id" = $1 AND "order_type" = 1
          AND (("created_at" >= $2 AND "created_at" < $3) OR ("paid_at" >= $2 AND "paid_at" < $3))
        ORDER BY "order_no"`,
      [channelId, from, to],
    );
    return rows.map((r) => ({ orderNo: r.order_no, amountFen: Number(r.cny_fen), channelTradeNo: r.channel_trade_no, paidAt: r.paid_at }));
  }

  /** The refunds of the channel's orders created or settled in [from, to), for a channel asked about each. */
  async refundsOfDay(
    channelId: number,
    from: Date,
    to: Date,
  ): Promise<{ refundNo: string; orderNo: string; channelTradeNo: string | null; amountFen: number; orderAmountFen: number }[]> {
    const rows = await this.dataSource.query<{ refund_no: string; order_no: string; channel_trade_no: string | null; refund_fen: string; cny_fen: string }[]>(
      `SELECT r."refund_no", r."order_no", o."channel_trade_no", r."refund_fen", o."cny_fen" FROM "refunds" r JOIN "orders" o ON o."id" = r."order_id"
        WHERE o."channel_id" = $1 AND ((r."created_at" >= $2 AND r."created_at" < $3) OR (r."updated_at" >= $2 AND r."updated_at" < $3))
        ORDER BY r."refund_no"`,
      [channelId, from, to],
    );
    return rows.map((r) => ({
      refundNo: r.refund_no,
      orderNo: r.order_no,
      channelTradeNo: r.channel_trade_no,
      amountFen: Number(r.refund_fen),
      orderAmountFen: Number(r.cny_fen),
    }));
  }

  /**
   * Stores a run and its lines in one transaction, once per (channel, day, bill hash): the same
   * bill again answers the run already stored, with `created` false.
   */
  async store(run: NewReconRun): Promise<{ run: ReconRunRow; created: boolean }> {
    return this.dataSource.transaction(async (em) => {
      const t = run.totals;
      const inserted = await em.query<RunRecord[]>(
        `INSERT INTO "recon_runs" ("channel_id", "bill_date", "status", "bill_format", "bill_sha256", "bill_raw", "error",
            "bill_total_fen", "our_total_fen", "fee_fen", "difference_fen", "counts")
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         ON CONFLICT ("channel_id", "bill_date", "bill_sha256") DO NOTHING RETURNING ${RUN_COLUMNS}`,
        [
          run.channelId,
          run.billDate,
          run.status,
          run.format,
          run.sha256,
          run.raw,
          run.error,
          t?.billTotalFen ?? 0,
          t?.ourTotalFen ?? 0,
          t?.feeFen ?? 0,
          t?.differenceFen ?? 0,
          JSON.stringify(t?.counts ?? {}),
        ],
      );
      if (inserted.length === 0) {
        const [existing] = await em.query<RunRecord[]>(
          `SELECT ${RUN_COLUMNS} FROM "recon_runs" WHERE "channel_id" = $1 AND "bill_date" = $2 AND "bill_sha256" = $3`,
          [run.channelId, run.billDate, run.sha256],
        );
        return { run: runRow(existing), created: false };
      }
      const runId = inserted[0].id;
      // One statement for every line: a bill of thousands of lines is one round trip.
      if (run.lines.length > 0) {
        await em.query(
          `INSERT INTO "recon_lines" ("run_id", "class", "kind", "order_no", "refund_no", "channel_trade_no", "bill_amount_fen",
              "our_amount_fen", "fee_fen", "our_status", "bill_line_no", "bill_line", "note")
           SELECT $1, l."class", l."kind", l."orderNo", l."refundNo", l."channelTradeNo", l."billAmountFen", l."ourAmountFen",
                  l."feeFen", l."ourStatus", l."billLineNo", l."billLine", l."note"
             FROM jsonb_to_recordset($2::jsonb) AS l("class" text, "kind" text, "orderNo" text, "refundNo" text, "channelTradeNo" text,
                  "billAmountFen" bigint, "ourAmountFen" bigint, "feeFen" bigint, "ourStatus" text, "billLineNo" int, "billLine" text, "note" text)`,
          [runId, JSON.stringify(run.lines)],
        );
      }
      return { run: runRow(inserted[0]), created: true };
    });
  }

  /** Every line that did not match, by class, and every refused bill, of all runs: what /metrics shows. */
  async figures(): Promise<{ mismatches: Partial<Record<ReconClass, number>>; refused: number }> {
    const [rows, [refused]] = await Promise.all([
      this.dataSource.query<{ class: ReconClass; n: string }[]>(
        `SELECT "class", count(*) AS "n" FROM "recon_lines" WHERE "class" <> 'matched' GROUP BY "class"`,
      ),
      this.dataSource.query<{ n: string }[]>(`SELECT count(*) AS "n" FROM "recon_runs" WHERE "status" = 'refused'`),
    ]);
    return { mismatches: Object.fromEntries(rows.map((r) => [r.class, Number(r.n)])), refused: Number(refused.n) };
  }

  async setResolution(lineId: string, resolution: string): Promise<void> {
    await this.dataSource.query(`UPDATE "recon_lines" SET "resolution" = $2 WHERE "id" = $1`, [lineId, resolution]);
  }

  /** Every run of a day, per channel in the order they ran. */
  async runsOf(billDate: string, channelId: number | null = null): Promise<ReconRunRow[]> {
    const rows = await this.dataSource.query<RunRecord[]>(
      `SELECT ${RUN_COLUMNS} FROM "recon_runs" WHERE "bill_date" = $1 AND ($2::int IS NULL OR "channel_id" = $2) ORDER BY "channel_id", "id"`,
      [billDate, channelId],
    );
    return rows.map(runRow);
  }

  /** A run's lines; only those that are not matched unless `all`. */
  async linesOf(runId: string, all = false): Promise<StoredReconLine[]> {
    const rows = await this.dataSource.query<Record<string, unknown>[]>(
      `SELECT "id", "class", "kind", "order_no", "refund_no", "channel_trade_no", "bill_amount_fen", "our_amount_fen", "fee_fen",
              "our_status", "bill_line_no", "bill_line", "note", "resolution"
         FROM "recon_lines" WHERE "run_id" = $1 AND ($2 OR "class" <> 'matched') ORDER BY "id"`,
      [runId, all],
    );
    const fen = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
    return rows.map((r) => ({
      id: String(r.id),
      class: r.class as ReconClass,
      kind: r.kind as MovementKind,
      orderNo: r.order_no as string | null,
      refundNo: r.refund_no as string | null,
      channelTradeNo: r.channel_trade_no as string | null,
      billAmountFen: fen(r.bill_amount_fen),
      ourAmountFen: fen(r.our_amount_fen),
      feeFen: fen(r.fee_fen),
      ourStatus: r.our_status as string | null,
      billLineNo: r.bill_line_no as number | null,
      billLine: r.bill_line as string | null,
      note: r.note as string | null,
      resolution: r.resolution as string | null,
    }));
  }
}
