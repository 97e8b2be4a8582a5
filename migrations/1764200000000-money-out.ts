import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Money out (SPEC 5): refunds, sell orders (payouts) and a ledger where every movement of a
 * balance is an entry. The balance can never go below zero: a CHECK the database enforces,
 * whatever the code does. New rules over existing tables are added NOT VALID then validated,
 * so the existing rows (top-ups and their credits only) are checked without blocking writes.
 */
export class MoneyOut1764200000000 implements MigrationInterface {
  name = 'MoneyOut1764200000000';

  async up(q: QueryRunner): Promise<void> {
    for (const [name, rule] of [
      ['balances_available_fen_check', `"available_fen" >= 0`],
      ['balances_deposit_fen_check', `"deposit_fen" >= 0`],
    ]) {
      await q.query(`ALTER TABLE "balances" ADD CONSTRAINT "${name}" CHECK (${rule}) NOT VALID`);
      await q.query(`ALTER TABLE "balances" VALIDATE CONSTRAINT "${name}"`);
    }

    // A sell order's merchant_actual_amount is what leaves the balance: cny + service, no deposit.
    await q.query(`ALTER TABLE "orders" DROP CONSTRAINT "orders_check"`);
    await q.query(`ALTER TABLE "orders" ADD CONSTRAINT "orders_amounts_check" CHECK (
      ("order_type" = 1 AND "cny_fen" = "service_fen" + "deposit_fen" + "merchant_actual_fen")
      OR ("order_type" = 2 AND "deposit_fen" = 0 AND "merchant_actual_fen" = "cny_fen" + "service_fen")) NOT VALID`);
    await q.query(`ALTER TABLE "orders" VALIDATE CONSTRAINT "orders_amounts_check"`);

    await q.query(`CREATE TABLE "refunds" (
      "id" BIGSERIAL PRIMARY KEY,
      "refund_no" varchar(22) NOT NULL,
      "merchant_id" integer NOT NULL REFERENCES "merchants" ("id"),
      "order_id" bigint NOT NULL REFERENCES "orders" ("id"),
      "order_no" varchar(22) NOT NULL,
      "merchant_refund_no" varchar(64) NOT NULL,
      "refund_fen" bigint NOT NULL CHECK ("refund_fen" > 0),
      "reason" varchar(128),
      "notify_url" varchar(512),
      "request_hash" varchar(64) NOT NULL,
      "status" varchar(16) NOT NULL CHECK ("status" IN ('processing', 'succeeded', 'failed')),
      "channel_refund_no" varchar(128),
      "failure" varchar(256),
      "channel_requested_at" timestamptz,
      "lease_until" timestamptz,
      "attempted_at" timestamptz,
      "created_at" timestamptz NOT NULL,
      "updated_at" timestamptz NOT NULL)`);
    await q.query(`CREATE UNIQUE INDEX "uq_refunds_refund_no" ON "refunds" ("refund_no")`);
    await q.query(`CREATE UNIQUE INDEX "uq_refunds_merchant_refund_no" ON "refunds" ("merchant_id", "merchant_refund_no")`);
    await q.query(`CREATE UNIQUE INDEX "uq_refunds_order_processing" ON "refunds" ("order_id") WHERE "status" = 'processing'`);
    await q.query(`CREATE INDEX "ix_refunds_order" ON "refunds" ("order_id", "created_at")`);

    await q.query(`CREATE TABLE "payouts" (
      "order_id" bigint PRIMARY KEY REFERENCES "orders" ("id"),
      "payee_name" varchar(64) NOT NULL,
      "payee_account_enc" text NOT NULL,
      "payee_account_masked" varchar(32) NOT NULL,
      "payee_bank" varchar(64) NOT NULL,
      "channel_payout_no" varchar(128),
      "failure" varchar(256),
      "channel_requested_at" timestamptz,
      "lease_until" timestamptz,
      "attempted_at" timestamptz NOT NULL DEFAULT now(),
      "settled_at" timestamptz)`);
    await q.query(`CREATE INDEX "ix_payouts_open" ON "payouts" ("attempted_at") WHERE "settled_at" IS NULL`);

    // Entries about a refund are unique per refund and kind; those about an order, per order and kind.
    await q.query(`ALTER TABLE "ledger_entries" ADD COLUMN "refund_id" bigint REFERENCES "refunds" ("id")`);
    await q.query(`DROP INDEX "uq_ledger_order_kind"`);
    await q.query(`CREATE UNIQUE INDEX "uq_ledger_order_kind" ON "ledger_entries" ("order_id", "kind") WHERE "refund_id" IS NULL`);
    await q.query(`CREATE UNIQUE INDEX "uq_ledger_refund_kind" ON "ledger_entries" ("refund_id", "kind") WHERE "refund_id" IS NOT NULL`);
    await q.query(`ALTER TABLE "ledger_entries" ADD CONSTRAINT "ledger_entries_kind_check" CHECK (
      "kind" IN ('order_credit', 'order_deposit', 'refund_debit', 'refund_reversal', 'sell_debit', 'sell_reversal')
      AND ("kind" IN ('refund_debit', 'refund_reversal')) = ("refund_id" IS NOT NULL)) NOT VALID`);
    await q.query(`ALTER TABLE "ledger_entries" VALIDATE CONSTRAINT "ledger_entries_kind_check"`);

    // Refund events belong to their order (one delivery order per order) and name their refund.
    await q.query(`ALTER TABLE "order_events" ADD COLUMN "refund_id" bigint REFERENCES "refunds" ("id")`);
    await q.query(`ALTER TABLE "order_events" DROP CONSTRAINT "order_events_type_check"`);
    await q.query(`ALTER TABLE "order_events" ADD CONSTRAINT "order_events_type_check"
      CHECK ("type" IN ('order.paid', 'order.completed', 'order.cancelled', 'payment.amount_mismatch', 'refund.succeeded', 'refund.failed')) NOT VALID`);
    await q.query(`ALTER TABLE "order_events" VALIDATE CONSTRAINT "order_events_type_check"`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      `DELETE FROM "callback_attempts" WHERE "delivery_id" IN (SELECT d."id" FROM "callback_deliveries" d JOIN "order_events" e ON e."id" = d."event_id" WHERE e."type" LIKE 'refund.%')`,
    );
    await q.query(`DELETE FROM "callback_deliveries" WHERE "event_id" IN (SELECT "id" FROM "order_events" WHERE "type" LIKE 'refund.%')`);
    await q.query(`DELETE FROM "order_events" WHERE "type" LIKE 'refund.%'`);
    await q.query(`ALTER TABLE "order_events" DROP CONSTRAINT "order_events_type_check"`);
    await q.query(`ALTER TABLE "order_events" ADD CONSTRAINT "order_events_type_check"
      CHECK ("type" IN ('order.paid', 'order.completed', 'order.cancelled', 'payment.amount_mismatch'))`);
    await q.query(`ALTER TABLE "order_events" DROP COLUMN "refund_id"`);
    // Going back leaves money-out's entries nowhere to live: the balances they moved stay as they are.
    await q.query(`DELETE FROM "ledger_entries" WHERE "kind" NOT IN ('order_credit', 'order_deposit')`);
    await q.query(`ALTER TABLE "ledger_entries" DROP CONSTRAINT "ledger_entries_kind_check"`);
    await q.query(`DROP INDEX "uq_ledger_refund_kind"`);
    await q.query(`DROP INDEX "uq_ledger_order_kind"`);
    await q.query(`ALTER TABLE "ledger_entries" DROP COLUMN "refund_id"`);
    await q.query(`CREATE UNIQUE INDEX "uq_ledger_order_kind" ON "ledger_entries" ("order_id", "kind")`);
    await q.query(`DROP TABLE "payouts"`);
    await q.query(`DROP TABLE "refunds"`);
    await q.query(`ALTER TABLE "orders" DROP CONSTRAINT "orders_amounts_check"`);
    await q.query(`ALTER TABLE "orders" ADD CONSTRAINT "orders_check" CHECK ("cny_fen" = "service_fen" + "deposit_fen" + "merchant_actual_fen") NOT VALID`);
    await q.query(`ALTER TABLE "balances" DROP CONSTRAINT "balances_deposit_fen_check"`);
    await q.query(`ALTER TABLE "balances" DROP CONSTRAINT "balances_available_fen_check"`);
  }
}
