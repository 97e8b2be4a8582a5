import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * SPEC 5 and 6, the cashier: an order keeps what the payer buys (`subject`) and where the payer
 * goes back to (`return_url`), both null for orders made before; `order_prepays` keeps the trade a
 * provider opened before the payer was sent to it (WeChat's code_url, h5_url or prepay_id), one
 * per order, for WeChat keeps one trade type per out_trade_no: used again while valid, and the
 * row's mode says which type the order is bound to.
 */
export class Cashier1764660000000 implements MigrationInterface {
  name = 'Cashier1764660000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "orders" ADD COLUMN "subject" varchar(128), ADD COLUMN "return_url" varchar(512)`);
    await q.query(`CREATE TABLE "order_prepays" (
      "order_id" bigint PRIMARY KEY REFERENCES "orders" ("id") ON DELETE CASCADE,
      "mode" varchar(8) NOT NULL,
      "payer" varchar(128),
      "prepay" text,
      "valid_until" timestamptz,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      "updated_at" timestamptz NOT NULL DEFAULT now()
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "order_prepays"`);
    await q.query(`ALTER TABLE "orders" DROP COLUMN "subject", DROP COLUMN "return_url"`);
  }
}
