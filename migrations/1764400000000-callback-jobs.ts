import type { MigrationInterface, QueryRunner } from 'typeorm';
import { CALLBACK_FUNCTIONS } from '../libs/db/src/sql/callback-functions';

/**
 * Callbacks on BullMQ (SPEC 7 Durability, Cost, Fairness): one job per delivery instead of one
 * claim over every pending row under a lock shared by all workers. The delivery keeps the URL
 * resolved when it was written (no trigger, no COALESCE copies); its circuit is per (merchant,
 * destination), the destination coming from the one URL parser in TypeScript; the functions a
 * job calls touch rows by key only and live in libs/db/src/sql/callback-functions.ts.
 */
export class CallbackJobs1764400000000 implements MigrationInterface {
  name = 'CallbackJobs1764400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION "claim_callback_deliveries"(integer, integer, integer, integer, integer, text)`);
    await q.query(`DROP TRIGGER "callback_deliveries_fill" ON "callback_deliveries"`);
    await q.query(`DROP FUNCTION "callback_delivery_fill"()`);
    await q.query(`DROP INDEX "ix_deliveries_pending_destination"`);
    await q.query(`DROP INDEX "ix_deliveries_leased"`);
    await q.query(`DROP TABLE "callback_destinations"`);

    await q.query(`ALTER TABLE "callback_deliveries" ADD COLUMN "notify_url" varchar(512)`);
    // Written once, here, for the rows before this migration; new rows carry it from their writer.
    await q.query(`UPDATE "callback_deliveries" d SET "notify_url" = COALESCE(r."notify_url", o."notify_url", m."notify_url")
       FROM "order_events" e JOIN "orders" o ON o."id" = e."order_id" JOIN "merchants" m ON m."id" = e."merchant_id" LEFT JOIN "refunds" r ON r."id" = e."refund_id"
      WHERE e."id" = d."event_id"`);
    // The regex key is gone: the worker writes the parser's destination at its first claim.
    await q.query(`UPDATE "callback_deliveries" SET "destination" = '' WHERE "status" = 'pending'`);
    await q.query(`DROP FUNCTION "callback_destination"(text)`);

    // A circuit's held deliveries, released when its probe succeeds.
    await q.query(`CREATE INDEX "ix_deliveries_pending_key" ON "callback_deliveries" ("merchant_id", "destination") WHERE "status" = 'pending'`);
    await q.query(`CREATE TABLE "callback_circuits" (
      "merchant_id" integer NOT NULL REFERENCES "merchants" ("id"),
      "destination" varchar(600) NOT NULL,
      "consecutive_failures" integer NOT NULL DEFAULT 0,
      "open_since" timestamptz,
      "next_probe_at" timestamptz,
      "last_success_at" timestamptz,
      "last_failure_at" timestamptz,
      "updated_at" timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY ("merchant_id", "destination"))`);
    await q.query(`CREATE INDEX "ix_circuits_open" ON "callback_circuits" ("merchant_id") WHERE "open_since" IS NOT NULL`);
    for (const fn of CALLBACK_FUNCTIONS) await q.query(fn);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      `DROP FUNCTION "record_callback_attempt"(uuid, integer, text, integer, integer, text, text, text, timestamptz, text, text, integer, integer)`,
    );
    await q.query(`DROP FUNCTION "claim_callback_attempt"(uuid, text, integer, integer, integer, text)`);
    await q.query(`DROP TABLE "callback_circuits"`);
    await q.query(`DROP INDEX "ix_deliveries_pending_key"`);
    await q.query(`ALTER TABLE "callback_deliveries" DROP COLUMN "notify_url"`);
  }
}
