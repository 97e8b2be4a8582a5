import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Per-merchant order counts by status and type, kept by statement-level triggers, so
 * orderQueryList's `total` without a time bound is a sum of a few rows instead of a count
 * over every order the merchant has (2.8 s at p99 for a million orders). The counter rows are
 * locked in one global order (ORDER BY), so concurrent transitions cannot deadlock on them.
 */
export class OrderCounts1763800000000 implements MigrationInterface {
  name = 'OrderCounts1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "order_counts" (
      "merchant_id" integer NOT NULL REFERENCES "merchants" ("id"),
      "status" varchar(16) NOT NULL,
      "order_type" smallint NOT NULL,
      "n" bigint NOT NULL,
      PRIMARY KEY ("merchant_id", "status", "order_type"))`);
    await q.query(`INSERT INTO "order_counts" ("merchant_id", "status", "order_type", "n")
      SELECT "merchant_id", "status", "order_type", count(*) FROM "orders" GROUP BY 1, 2, 3`);
    await q.query(`CREATE FUNCTION "order_counts_apply"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO order_counts (merchant_id, status, order_type, n)
          SELECT merchant_id, status, order_type, count(*) FROM new_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
          ON CONFLICT (merchant_id, status, order_type) DO UPDATE SET n = order_counts.n + EXCLUDED.n;
        ELSIF TG_OP = 'UPDATE' THEN
          INSERT INTO order_counts (merchant_id, status, order_type, n)
          SELECT merchant_id, status, order_type, sum(d) FROM (
            SELECT merchant_id, status, order_type, -1 AS d FROM old_rows
            UNION ALL
            SELECT merchant_id, status, order_type, 1 AS d FROM new_rows) changes
          GROUP BY 1, 2, 3 HAVING sum(d) <> 0 ORDER BY 1, 2, 3
          ON CONFLICT (merchant_id, status, order_type) DO UPDATE SET n = order_counts.n + EXCLUDED.n;
        ELSE
          UPDATE order_counts c SET n = c.n - gone.k
            FROM (SELECT merchant_id, status, order_type, count(*) AS k FROM old_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3) gone
           WHERE c.merchant_id = gone.merchant_id AND c.status = gone.status AND c.order_type = gone.order_type;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER "orders_count_insert" AFTER INSERT ON "orders"
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "order_counts_apply"()`);
    await q.query(`CREATE TRIGGER "orders_count_update" AFTER UPDATE ON "orders"
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "order_counts_apply"()`);
    await q.query(`CREATE TRIGGER "orders_count_delete" AFTER DELETE ON "orders"
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "order_counts_apply"()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER "orders_count_delete" ON "orders"`);
    await q.query(`DROP TRIGGER "orders_count_update" ON "orders"`);
    await q.query(`DROP TRIGGER "orders_count_insert" ON "orders"`);
    await q.query(`DROP FUNCTION "order_counts_apply"()`);
    await q.query(`DROP TABLE "order_counts"`);
  }
}
