import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Secret rotation with a grace period (SPEC 3): the previous secret, sealed under its own AAD
 * ("merchant:{api_key}:previous", so it can never be swapped in as the current one), and when it
 * stops verifying. Callback tools (SPEC 7): deliveries a merchant recovered are counted apart
 * from resends, failed deliveries are found per merchant by when they failed, and the
 * once-per-minute allowances of callbackRecover and callbackTest live in one small table every
 * API instance shares.
 */
export class SecretGraceAndCallbackTools1764290000000 implements MigrationInterface {
  name = 'SecretGraceAndCallbackTools1764290000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "merchants" ADD COLUMN "api_secret_previous_enc" text, ADD COLUMN "api_secret_previous_until" timestamptz`);
    await q.query(`ALTER TABLE "merchants" ADD CONSTRAINT "merchants_previous_secret_check"
      CHECK (("api_secret_previous_enc" IS NULL) = ("api_secret_previous_until" IS NULL))`);

    await q.query(`ALTER TABLE "callback_deliveries" DROP CONSTRAINT "callback_deliveries_origin_check"`);
    await q.query(`ALTER TABLE "callback_deliveries" ADD CONSTRAINT "callback_deliveries_origin_check" CHECK ("origin" IN ('event', 'resend', 'recover'))`);
    await q.query(`CREATE INDEX "ix_deliveries_merchant_failed" ON "callback_deliveries" ("merchant_id", "updated_at") WHERE "status" = 'failed'`);

    await q.query(`CREATE TABLE "callback_tool_allowances" (
      "merchant_id" integer NOT NULL REFERENCES "merchants" ("id"),
      "tool" varchar(16) NOT NULL,
      "window_started_at" timestamptz NOT NULL,
      "used" integer NOT NULL,
      PRIMARY KEY ("merchant_id", "tool"))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "callback_tool_allowances"`);
    await q.query(`DROP INDEX "ix_deliveries_merchant_failed"`);
    await q.query(`ALTER TABLE "callback_deliveries" DROP CONSTRAINT "callback_deliveries_origin_check"`);
    await q.query(`ALTER TABLE "callback_deliveries" ADD CONSTRAINT "callback_deliveries_origin_check" CHECK ("origin" IN ('event', 'resend'))`);
    await q.query(`ALTER TABLE "merchants" DROP CONSTRAINT "merchants_previous_secret_check"`);
    await q.query(`ALTER TABLE "merchants" DROP COLUMN "api_secret_previous_until", DROP COLUMN "api_secret_previous_enc"`);
  }
}
