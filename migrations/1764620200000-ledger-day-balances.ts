import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Statements whose cost does not grow with a merchant's history (SPEC 6): the balances at the
 * end of each closed Asia/Shanghai day, appended once per merchant and day (never updated: no
 * row every write of a merchant must lock), so a day's opening is one row; and the ledger's
 * merchant index ordered as statements page through a day, carrying the kind and amount so
 * counting and summing a day reads the index alone.
 */
export class LedgerDayBalances1764620200000 implements MigrationInterface {
  name = 'LedgerDayBalances1764620200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "ledger_day_balances" (
      "merchant_id" integer NOT NULL REFERENCES "merchants" ("id"),
      "day" date NOT NULL,
      "available_fen" bigint NOT NULL,
      "deposit_fen" bigint NOT NULL,
      "movements" integer NOT NULL,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY ("merchant_id", "day"))`);
    await q.query(`CREATE INDEX "ix_ledger_merchant_time" ON "ledger_entries" ("merchant_id", "created_at", "id") INCLUDE ("kind", "amount_fen")`);
    await q.query(`DROP INDEX "ix_ledger_merchant"`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX "ix_ledger_merchant" ON "ledger_entries" ("merchant_id", "created_at")`);
    await q.query(`DROP INDEX "ix_ledger_merchant_time"`);
    await q.query(`DROP TABLE "ledger_day_balances"`);
  }
}
