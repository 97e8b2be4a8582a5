import type { MigrationInterface, QueryRunner } from 'typeorm';

/** A counter table kept by order_counts_apply(): its key columns and how each is computed from an orders row. */
interface Counter {
  table: string;
  key: { column: string; from: string }[];
}

const ORDER_COUNTS: Counter = {
  table: 'order_counts',
  key: [
    { column: 'merchant_id', from: 'merchant_id' },
    { column: 'status', from: 'status' },
    { column: 'order_type', from: 'order_type' },
  ],
};

/** The UTC day of an order's created_at, whatever the session's TimeZone: the bucket of order_day_counts. */
const ORDER_DAY = `(created_at AT TIME ZONE 'UTC')::date`;

const ORDER_DAY_COUNTS: Counter = {
  table: 'order_day_counts',
  key: [
    { column: 'merchant_id', from: 'merchant_id' },
    { column: 'day', from: ORDER_DAY },
    { column: 'status', from: 'status' },
    { column: 'order_type', from: 'order_type' },
  ],
};

/**
 * The statement-trigger function keeping `counters`, each changed by one statement per trigger
 * firing, in the order given and with rows sorted by key, so writers lock counter rows in one
 * order. As OrderCounts1763800000000 wrote it for order_counts alone.
 */
function applyFunction(counters: Counter[]): string {
  const columns = (c: Counter) => c.key.map((k) => k.column).join(', ');
  const keyed = (c: Counter) => c.key.map((k) => (k.from === k.column ? k.column : `${k.from} AS ${k.column}`)).join(', ');
  const positions = (c: Counter) => c.key.map((_, i) => i + 1).join(', ');
  const upsert = (c: Counter) => `ON CONFLICT (${columns(c)}) DO UPDATE SET n = ${c.table}.n + EXCLUDED.n;`;
  const onInsert = (c: Counter) => `
          INSERT INTO ${c.table} (${columns(c)}, n)
          SELECT ${keyed(c)}, count(*) FROM new_rows GROUP BY ${positions(c)} ORDER BY ${positions(c)}
          ${upsert(c)}`;
  const onUpdate = (c: Counter) => `
          INSERT INTO ${c.table} (${columns(c)}, n)
          SELECT ${columns(c)}, sum(d) FROM (
            SELECT ${keyed(c)}, -1 AS d FROM old_rows
            UNION ALL
            SELECT ${keyed(c)}, 1 AS d FROM new_rows) changes
          GROUP BY ${positions(c)} HAVING sum(d) <> 0 ORDER BY ${positions(c)}
          ${upsert(c)}`;
  const onDelete = (c: Counter) => `
          UPDATE ${c.table} c SET n = c.n - gone.k
            FROM (SELECT ${keyed(c)}, count(*) AS k FROM old_rows GROUP BY ${positions(c)} ORDER BY ${positions(c)}) gone
           WHERE ${c.key.map((k) => `c.${k.column} = gone.${k.column}`).join(' AND ')};`;
  return `CREATE OR REPLACE FUNCTION "order_counts_apply"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN${counters.map(onInsert).join('')}
        ELSIF TG_OP = 'UPDATE' THEN${counters.map(onUpdate).join('')}
        ELSE${counters.map(onDelete).join('')}
        END IF;
        RETURN NULL;
      END $$`;
}

/**
 * Per-merchant order counts by UTC day, status and type, kept by the same statement triggers as
 * order_counts, so orderQueryList's `total` within a time window is a sum over the whole days
 * inside it plus exact counts of the partial days at its edges, and a deep page can skip whole
 * days instead of reading every row before it. Days are UTC: their edges are multiples of 86400
 * in Unix seconds, the unit of start_time and end_time, and depend on no time zone database.
 */
export class OrderDayCounts1763900000000 implements MigrationInterface {
  name = 'OrderDayCounts1763900000000';

  async up(q: QueryRunner): Promise<void> {
    // Writers wait until the trigger counts days, so no order is inserted or changed between the backfill and it.
    await q.query(`LOCK TABLE "orders" IN SHARE ROW EXCLUSIVE MODE`);
    await q.query(`CREATE TABLE "order_day_counts" (
      "merchant_id" integer NOT NULL REFERENCES "merchants" ("id"),
      "day" date NOT NULL,
      "status" varchar(16) NOT NULL,
      "order_type" smallint NOT NULL,
      "n" bigint NOT NULL,
      PRIMARY KEY ("merchant_id", "day", "status", "order_type"))`);
    await q.query(`INSERT INTO "order_day_counts" ("merchant_id", "day", "status", "order_type", "n")
      SELECT "merchant_id", ${ORDER_DAY}, "status", "order_type", count(*) FROM "orders" GROUP BY 1, 2, 3, 4`);
    await q.query(applyFunction([ORDER_COUNTS, ORDER_DAY_COUNTS]));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(applyFunction([ORDER_COUNTS]));
    await q.query(`DROP TABLE "order_day_counts"`);
  }
}
