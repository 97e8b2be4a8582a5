import type { MigrationInterface, QueryRunner } from 'typeorm';

/** One row of changes per status: appended, never updated, so no writer ever waits on another here. */
const append = (changes: string) => `
        INSERT INTO callback_delivery_counts (status, n)
        SELECT status, sum(d) FROM (${changes}) changes GROUP BY status HAVING sum(d) <> 0;`;

/**
 * merchant_pay_callback_deliveries{status} read a count(*) ... GROUP BY status over every
 * delivery: a whole-table scan every 10 s that grows with the history retention keeps (issue 29
 * item 8, "the gauges never scan a whole table"). callback_delivery_counts holds the counts as
 * appended changes: inserts and deletes per statement (a retention batch of 1,000 deletes is one
 * row), a status change per row; the worker's sweep folds them to one row per status, so the
 * gauge sums what came since the last sweep. Appending rather than upserting counter rows: a
 * counter row shared by every merchant (even split in slots) is a lock that the settlement,
 * refund and sell-order transactions took in different orders, and PostgreSQL broke the
 * resulting deadlocks (seen in the chaos run). The counts start from one count of today's rows,
 * taken while writers wait.
 */
export class DeliveryStatusCounts1764500000000 implements MigrationInterface {
  name = 'DeliveryStatusCounts1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE "callback_deliveries" IN SHARE ROW EXCLUSIVE MODE`);
    await q.query(`CREATE TABLE "callback_delivery_counts" (
      "id" BIGSERIAL PRIMARY KEY,
      "status" varchar(16) NOT NULL,
      "n" bigint NOT NULL)`);
    await q.query(`INSERT INTO "callback_delivery_counts" ("status", "n") SELECT "status", count(*) FROM "callback_deliveries" GROUP BY "status"`);
    await q.query(`CREATE FUNCTION "callback_delivery_counts_apply"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN${append('SELECT status, 1 AS d FROM new_rows')}
        ELSIF TG_OP = 'DELETE' THEN${append('SELECT status, -1 AS d FROM old_rows')}
        ELSE${append('SELECT OLD.status, -1 AS d UNION ALL SELECT NEW.status, 1 AS d')}
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER "callback_deliveries_count_insert" AFTER INSERT ON "callback_deliveries"
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "callback_delivery_counts_apply"()`);
    // Per row, and only when the status changes: the claims, leases and attempts that update a delivery
    // many times over its life cost nothing here (a statement trigger would collect transition rows for each).
    await q.query(`CREATE TRIGGER "callback_deliveries_count_update" AFTER UPDATE OF "status" ON "callback_deliveries"
      FOR EACH ROW WHEN (OLD."status" IS DISTINCT FROM NEW."status") EXECUTE FUNCTION "callback_delivery_counts_apply"()`);
    await q.query(`CREATE TRIGGER "callback_deliveries_count_delete" AFTER DELETE ON "callback_deliveries"
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "callback_delivery_counts_apply"()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER "callback_deliveries_count_delete" ON "callback_deliveries"`);
    await q.query(`DROP TRIGGER "callback_deliveries_count_update" ON "callback_deliveries"`);
    await q.query(`DROP TRIGGER "callback_deliveries_count_insert" ON "callback_deliveries"`);
    await q.query(`DROP FUNCTION "callback_delivery_counts_apply"()`);
    await q.query(`DROP TABLE "callback_delivery_counts"`);
  }
}
