import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Slots per status, as ORDER_COUNT_SLOTS: a writer adds to its session's slot, so writers rarely share a counter row. */
const SLOTS = 32;

/** Rows upserted sorted by status, so writers sharing a slot lock its rows in one order. */
const upsert = (changes: string) => `
        INSERT INTO callback_delivery_counts (status, slot, n)
        SELECT status, my_slot, sum(d) FROM (${changes}) changes GROUP BY status HAVING sum(d) <> 0 ORDER BY status
        ON CONFLICT (status, slot) DO UPDATE SET n = callback_delivery_counts.n + EXCLUDED.n;`;

/**
 * merchant_pay_callback_deliveries{status} read a count(*) ... GROUP BY status over every
 * delivery: a whole-table scan every 10 s that grows with the history retention keeps (issue 29
 * item 8, "the gauges never scan a whole table"). callback_delivery_counts holds the counts,
 * kept by triggers: inserts and deletes per statement (one upsert per statement and status: a
 * retention batch of 1,000 deletes is one update), a status change per row, so the gauge sums at
 * most 3 x 32 rows. The counts start from one count of today's rows, taken while writers wait.
 */
export class DeliveryStatusCounts1764500000000 implements MigrationInterface {
  name = 'DeliveryStatusCounts1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE "callback_deliveries" IN SHARE ROW EXCLUSIVE MODE`);
    await q.query(`CREATE TABLE "callback_delivery_counts" (
      "status" varchar(16) NOT NULL,
      "slot" smallint NOT NULL,
      "n" bigint NOT NULL,
      PRIMARY KEY ("status", "slot"))`);
    await q.query(`INSERT INTO "callback_delivery_counts" ("status", "slot", "n") SELECT "status", 0, count(*) FROM "callback_deliveries" GROUP BY "status"`);
    await q.query(`CREATE FUNCTION "callback_delivery_counts_apply"() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        my_slot smallint := pg_backend_pid() % ${SLOTS};
      BEGIN
        IF TG_OP = 'INSERT' THEN${upsert('SELECT status, 1 AS d FROM new_rows')}
        ELSIF TG_OP = 'DELETE' THEN${upsert('SELECT status, -1 AS d FROM old_rows')}
        ELSE${upsert('SELECT OLD.status, -1 AS d UNION ALL SELECT NEW.status, 1 AS d')}
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
