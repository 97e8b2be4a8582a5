import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * order_counts_apply() with a slot per session, as this migration first loaded it
 * (migrations/functions/order-counts-apply.ts at 572861a), frozen. Its current body lives in
 * libs/db/src/sql/order-counts-apply.ts.
 */
const SLOTTED_ORDER_COUNTS_APPLY = `CREATE OR REPLACE FUNCTION "order_counts_apply"() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        my_slot smallint := pg_backend_pid() % 32;
      BEGIN
        IF TG_OP = 'INSERT' THEN
        INSERT INTO order_counts (merchant_id, status, order_type, slot, n)
        SELECT merchant_id, status, order_type, my_slot, sum(d) FROM (SELECT merchant_id, status, order_type, 1 AS d FROM new_rows) changes
        GROUP BY merchant_id, status, order_type HAVING sum(d) <> 0 ORDER BY merchant_id, status, order_type
        ON CONFLICT (merchant_id, status, order_type, slot) DO UPDATE SET n = order_counts.n + EXCLUDED.n;
        INSERT INTO order_day_counts (merchant_id, day, status, order_type, slot, n)
        SELECT merchant_id, day, status, order_type, my_slot, sum(d) FROM (SELECT merchant_id, (created_at AT TIME ZONE 'UTC')::date AS day, status, order_type, 1 AS d FROM new_rows) changes
        GROUP BY merchant_id, day, status, order_type HAVING sum(d) <> 0 ORDER BY merchant_id, day, status, order_type
        ON CONFLICT (merchant_id, day, status, order_type, slot) DO UPDATE SET n = order_day_counts.n + EXCLUDED.n;
        ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO order_counts (merchant_id, status, order_type, slot, n)
        SELECT merchant_id, status, order_type, my_slot, sum(d) FROM (SELECT merchant_id, status, order_type, -1 AS d FROM old_rows UNION ALL SELECT merchant_id, status, order_type, 1 AS d FROM new_rows) changes
        GROUP BY merchant_id, status, order_type HAVING sum(d) <> 0 ORDER BY merchant_id, status, order_type
        ON CONFLICT (merchant_id, status, order_type, slot) DO UPDATE SET n = order_counts.n + EXCLUDED.n;
        INSERT INTO order_day_counts (merchant_id, day, status, order_type, slot, n)
        SELECT merchant_id, day, status, order_type, my_slot, sum(d) FROM (SELECT merchant_id, (created_at AT TIME ZONE 'UTC')::date AS day, status, order_type, -1 AS d FROM old_rows UNION ALL SELECT merchant_id, (created_at AT TIME ZONE 'UTC')::date AS day, status, order_type, 1 AS d FROM new_rows) changes
        GROUP BY merchant_id, day, status, order_type HAVING sum(d) <> 0 ORDER BY merchant_id, day, status, order_type
        ON CONFLICT (merchant_id, day, status, order_type, slot) DO UPDATE SET n = order_day_counts.n + EXCLUDED.n;
        ELSE
        INSERT INTO order_counts (merchant_id, status, order_type, slot, n)
        SELECT merchant_id, status, order_type, my_slot, sum(d) FROM (SELECT merchant_id, status, order_type, -1 AS d FROM old_rows) changes
        GROUP BY merchant_id, status, order_type HAVING sum(d) <> 0 ORDER BY merchant_id, status, order_type
        ON CONFLICT (merchant_id, status, order_type, slot) DO UPDATE SET n = order_counts.n + EXCLUDED.n;
        INSERT INTO order_day_counts (merchant_id, day, status, order_type, slot, n)
        SELECT merchant_id, day, status, order_type, my_slot, sum(d) FROM (SELECT merchant_id, (created_at AT TIME ZONE 'UTC')::date AS day, status, order_type, -1 AS d FROM old_rows) changes
        GROUP BY merchant_id, day, status, order_type HAVING sum(d) <> 0 ORDER BY merchant_id, day, status, order_type
        ON CONFLICT (merchant_id, day, status, order_type, slot) DO UPDATE SET n = order_day_counts.n + EXCLUDED.n;
        END IF;
        RETURN NULL;
      END $$`;

/** The same without slots, for down (572861a), frozen. */
const UNSLOTTED_ORDER_COUNTS_APPLY = `CREATE OR REPLACE FUNCTION "order_counts_apply"() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        my_slot smallint := pg_backend_pid() % 32;
      BEGIN
        IF TG_OP = 'INSERT' THEN
        INSERT INTO order_counts (merchant_id, status, order_type, n)
        SELECT merchant_id, status, order_type, sum(d) FROM (SELECT merchant_id, status, order_type, 1 AS d FROM new_rows) changes
        GROUP BY merchant_id, status, order_type HAVING sum(d) <> 0 ORDER BY merchant_id, status, order_type
        ON CONFLICT (merchant_id, status, order_type) DO UPDATE SET n = order_counts.n + EXCLUDED.n;
        INSERT INTO order_day_counts (merchant_id, day, status, order_type, n)
        SELECT merchant_id, day, status, order_type, sum(d) FROM (SELECT merchant_id, (created_at AT TIME ZONE 'UTC')::date AS day, status, order_type, 1 AS d FROM new_rows) changes
        GROUP BY merchant_id, day, status, order_type HAVING sum(d) <> 0 ORDER BY merchant_id, day, status, order_type
        ON CONFLICT (merchant_id, day, status, order_type) DO UPDATE SET n = order_day_counts.n + EXCLUDED.n;
        ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO order_counts (merchant_id, status, order_type, n)
        SELECT merchant_id, status, order_type, sum(d) FROM (SELECT merchant_id, status, order_type, -1 AS d FROM old_rows UNION ALL SELECT merchant_id, status, order_type, 1 AS d FROM new_rows) changes
        GROUP BY merchant_id, status, order_type HAVING sum(d) <> 0 ORDER BY merchant_id, status, order_type
        ON CONFLICT (merchant_id, status, order_type) DO UPDATE SET n = order_counts.n + EXCLUDED.n;
        INSERT INTO order_day_counts (merchant_id, day, status, order_type, n)
        SELECT merchant_id, day, status, order_type, sum(d) FROM (SELECT merchant_id, (created_at AT TIME ZONE 'UTC')::date AS day, status, order_type, -1 AS d FROM old_rows UNION ALL SELECT merchant_id, (created_at AT TIME ZONE 'UTC')::date AS day, status, order_type, 1 AS d FROM new_rows) changes
        GROUP BY merchant_id, day, status, order_type HAVING sum(d) <> 0 ORDER BY merchant_id, day, status, order_type
        ON CONFLICT (merchant_id, day, status, order_type) DO UPDATE SET n = order_day_counts.n + EXCLUDED.n;
        ELSE
        INSERT INTO order_counts (merchant_id, status, order_type, n)
        SELECT merchant_id, status, order_type, sum(d) FROM (SELECT merchant_id, status, order_type, -1 AS d FROM old_rows) changes
        GROUP BY merchant_id, status, order_type HAVING sum(d) <> 0 ORDER BY merchant_id, status, order_type
        ON CONFLICT (merchant_id, status, order_type) DO UPDATE SET n = order_counts.n + EXCLUDED.n;
        INSERT INTO order_day_counts (merchant_id, day, status, order_type, n)
        SELECT merchant_id, day, status, order_type, sum(d) FROM (SELECT merchant_id, (created_at AT TIME ZONE 'UTC')::date AS day, status, order_type, -1 AS d FROM old_rows) changes
        GROUP BY merchant_id, day, status, order_type HAVING sum(d) <> 0 ORDER BY merchant_id, day, status, order_type
        ON CONFLICT (merchant_id, day, status, order_type) DO UPDATE SET n = order_day_counts.n + EXCLUDED.n;
        END IF;
        RETURN NULL;
      END $$`;

/** The counter tables and their keys, the slot aside. */
const COUNTER_TABLES = [
  { table: 'order_counts', key: ['merchant_id', 'status', 'order_type'] },
  { table: 'order_day_counts', key: ['merchant_id', 'day', 'status', 'order_type'] },
];

/**
 * Splits each order_counts and order_day_counts key into 32 slots, one per database session
 * (backend pid modulo 32): before, every order of a merchant upserted the same two rows and every
 * transition four, so all of a big merchant's writes queued on those row locks until each
 * transaction committed (550 inserts/s for one merchant at 32 clients, 1,900-2,100/s spread over
 * 65). Today's rows become slot 0, so every total stays exactly what it was; reads already sum
 * over the rows of a key.
 */
export class OrderCountSlots1764410000000 implements MigrationInterface {
  name = 'OrderCountSlots1764410000000';

  async up(q: QueryRunner): Promise<void> {
    // Writers wait until the new trigger is in place, so no order changes between the two shapes.
    await q.query(`LOCK TABLE "orders" IN SHARE ROW EXCLUSIVE MODE`);
    for (const { table, key } of COUNTER_TABLES) {
      await q.query(`ALTER TABLE "${table}" ADD COLUMN "slot" smallint NOT NULL DEFAULT 0`);
      await q.query(`ALTER TABLE "${table}" ALTER COLUMN "slot" DROP DEFAULT`);
      await q.query(`ALTER TABLE "${table}" DROP CONSTRAINT "${table}_pkey", ADD PRIMARY KEY (${[...key, 'slot'].map((c) => `"${c}"`).join(', ')})`);
    }
    await q.query(SLOTTED_ORDER_COUNTS_APPLY);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE "orders" IN SHARE ROW EXCLUSIVE MODE`);
    for (const { table, key } of COUNTER_TABLES) {
      const columns = key.map((c) => `"${c}"`).join(', ');
      // Every other slot folded into slot 0, which then holds each key's whole count.
      await q.query(`WITH gone AS (DELETE FROM "${table}" WHERE "slot" <> 0 RETURNING ${columns}, "n")
        INSERT INTO "${table}" (${columns}, "slot", "n") SELECT ${columns}, 0, sum("n") FROM gone GROUP BY ${columns}
        ON CONFLICT (${columns}, "slot") DO UPDATE SET "n" = "${table}"."n" + EXCLUDED."n"`);
      await q.query(`ALTER TABLE "${table}" DROP CONSTRAINT "${table}_pkey", ADD PRIMARY KEY (${columns})`);
      await q.query(`ALTER TABLE "${table}" DROP COLUMN "slot"`);
    }
    await q.query(UNSLOTTED_ORDER_COUNTS_APPLY);
  }
}
