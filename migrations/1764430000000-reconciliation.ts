import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Reconciliation (SPEC 6): each run keeps the raw bill it read with its SHA-256 (the same file is
 * the same run; a changed file is a new run beside it) and one line per bill line or movement of
 * ours with its class. The sandbox, which has no books elsewhere, keeps its own bill here.
 */
export class Reconciliation1764430000000 implements MigrationInterface {
  name = 'Reconciliation1764430000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "recon_runs" (
      "id" BIGSERIAL PRIMARY KEY,
      "channel_id" integer NOT NULL REFERENCES "channels" ("id"),
      "bill_date" date NOT NULL,
      "status" varchar(16) NOT NULL CHECK ("status" IN ('completed', 'refused')),
      "bill_format" varchar(16) NOT NULL,
      "bill_sha256" char(64) NOT NULL,
      "bill_raw" bytea NOT NULL,
      "error" varchar(512),
      "bill_total_fen" bigint NOT NULL DEFAULT 0,
      "our_total_fen" bigint NOT NULL DEFAULT 0,
      "fee_fen" bigint NOT NULL DEFAULT 0,
      "difference_fen" bigint NOT NULL DEFAULT 0,
      "counts" jsonb NOT NULL DEFAULT '{}',
      "created_at" timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE UNIQUE INDEX "uq_recon_runs_bill" ON "recon_runs" ("channel_id", "bill_date", "bill_sha256")`);
    await q.query(`CREATE INDEX "ix_recon_runs_date" ON "recon_runs" ("bill_date", "channel_id", "id")`);

    await q.query(`CREATE TABLE "recon_lines" (
      "id" BIGSERIAL PRIMARY KEY,
      "run_id" bigint NOT NULL REFERENCES "recon_runs" ("id") ON DELETE CASCADE,
      "class" varchar(16) NOT NULL CHECK ("class" IN ('matched', 'missing_local', 'missing_channel', 'amount_mismatch', 'status_mismatch')),
      "kind" varchar(8) NOT NULL CHECK ("kind" IN ('pay', 'refund')),
      "order_no" varchar(64),
      "refund_no" varchar(64),
      "channel_trade_no" varchar(128),
      "bill_amount_fen" bigint,
      "our_amount_fen" bigint,
      "fee_fen" bigint,
      "our_status" varchar(16),
      "bill_line_no" integer,
      "bill_line" text,
      "note" varchar(128),
      "resolution" varchar(32))`);
    await q.query(`CREATE INDEX "ix_recon_lines_run" ON "recon_lines" ("run_id", "id")`);
    // recon_mismatches_total counts these: the matched majority stays out of the index.
    await q.query(`CREATE INDEX "ix_recon_lines_mismatch" ON "recon_lines" ("class") WHERE "class" <> 'matched'`);

    // A channel's paid top-ups of one day: what a run compares its bill with.
    await q.query(`CREATE INDEX "ix_orders_channel_paid" ON "orders" ("channel_id", "paid_at") WHERE "paid_at" IS NOT NULL`);

    await q.query(`CREATE TABLE "sandbox_bill_lines" (
      "id" BIGSERIAL PRIMARY KEY,
      "channel_id" integer NOT NULL REFERENCES "channels" ("id"),
      "kind" varchar(8) NOT NULL CHECK ("kind" IN ('pay', 'refund')),
      "trade_no" varchar(128) NOT NULL,
      "order_no" varchar(22) NOT NULL,
      "refund_no" varchar(22),
      "amount_fen" bigint NOT NULL CHECK ("amount_fen" > 0),
      "fee_fen" bigint NOT NULL DEFAULT 0,
      "occurred_at" timestamptz NOT NULL DEFAULT now(),
      CHECK (("kind" = 'refund') = ("refund_no" IS NOT NULL)))`);
    await q.query(`CREATE UNIQUE INDEX "uq_sandbox_bill_subject" ON "sandbox_bill_lines" ("channel_id", "kind", COALESCE("refund_no", "order_no"))`);
    await q.query(`CREATE INDEX "ix_sandbox_bill_day" ON "sandbox_bill_lines" ("channel_id", "occurred_at")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "sandbox_bill_lines"`);
    await q.query(`DROP INDEX "ix_orders_channel_paid"`);
    await q.query(`DROP TABLE "recon_lines"`);
    await q.query(`DROP TABLE "recon_runs"`);
  }
}
