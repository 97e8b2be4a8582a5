import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Which deliveries a merchant asked for (callbackResend) and which the order's own events made,
 * so resends can be limited per order and hour (SPEC 7). Existing rows are all counted as the
 * events' own: at worst an order gets its full ten resends in the hour after the upgrade.
 */
export class DeliveryOrigin1764000200000 implements MigrationInterface {
  name = 'DeliveryOrigin1764000200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE "callback_deliveries" ADD COLUMN "origin" varchar(8) NOT NULL DEFAULT 'event' CONSTRAINT "callback_deliveries_origin_check" CHECK ("origin" IN ('event', 'resend'))`,
    );
    // Small: only resends are indexed, the rows the per-order hourly count reads.
    await q.query(`CREATE INDEX "ix_deliveries_order_resends" ON "callback_deliveries" ("order_id", "created_at") WHERE "origin" = 'resend'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "ix_deliveries_order_resends"`);
    await q.query(`ALTER TABLE "callback_deliveries" DROP COLUMN "origin"`);
  }
}
