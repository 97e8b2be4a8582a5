/**
 * order_counts_apply(), the statement trigger keeping order_counts and order_day_counts: its
 * current body, in one source file. Migrations hold a frozen copy of what they loaded, so a change
 * here ships with a new migration loading it again (test/schema-replay.e2e-spec.ts fails until then).
 */

/** A counter table: its key columns and how each is computed from an orders row. */
interface Counter {
  table: string;
  key: { column: string; from: string }[];
}

/** The UTC day of an order's created_at, whatever the session's TimeZone: the bucket of order_day_counts. */
const ORDER_DAY = `(created_at AT TIME ZONE 'UTC')::date`;

const COUNTERS: Counter[] = [
  {
    table: 'order_counts',
    key: [
      { column: 'merchant_id', from: 'merchant_id' },
      { column: 'status', from: 'status' },
      { column: 'order_type', from: 'order_type' },
    ],
  },
  {
    table: 'order_day_counts',
    key: [
      { column: 'merchant_id', from: 'merchant_id' },
      { column: 'day', from: ORDER_DAY },
      { column: 'status', from: 'status' },
      { column: 'order_type', from: 'order_type' },
    ],
  },
];

/**
 * Slots per counter key. A writer adds to the slot of its database session (backend pid modulo
 * this), so the sessions of a pool (10 per process) rarely share a counter row and one merchant's
 * writes no longer queue on one row lock; a read sums the slots.
 */
export const ORDER_COUNT_SLOTS = 32;

/** The changes a trigger firing makes, as (key..., d) rows: +1 per new row, -1 per old one. */
const CHANGES: Record<'INSERT' | 'UPDATE' | 'DELETE', (keyed: string) => string> = {
  INSERT: (keyed) => `SELECT ${keyed}, 1 AS d FROM new_rows`,
  UPDATE: (keyed) => `SELECT ${keyed}, -1 AS d FROM old_rows UNION ALL SELECT ${keyed}, 1 AS d FROM new_rows`,
  DELETE: (keyed) => `SELECT ${keyed}, -1 AS d FROM old_rows`,
};

/**
 * The function, one upsert per counter per firing into the writer's slot. Rows are upserted
 * sorted by key, so writers that share a slot lock its rows in one order and cannot deadlock on them.
 */
function orderCountsApply(): string {
  const columns = (c: Counter) => c.key.map((k) => k.column).join(', ');
  const keyed = (c: Counter) => c.key.map((k) => (k.from === k.column ? k.column : `${k.from} AS ${k.column}`)).join(', ');
  const upsert = (op: keyof typeof CHANGES) => (c: Counter) => `
        INSERT INTO ${c.table} (${columns(c)}, slot, n)
        SELECT ${columns(c)}, my_slot, sum(d) FROM (${CHANGES[op](keyed(c))}) changes
        GROUP BY ${columns(c)} HAVING sum(d) <> 0 ORDER BY ${columns(c)}
        ON CONFLICT (${columns(c)}, slot) DO UPDATE SET n = ${c.table}.n + EXCLUDED.n;`;
  return `CREATE OR REPLACE FUNCTION "order_counts_apply"() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        my_slot smallint := pg_backend_pid() % ${ORDER_COUNT_SLOTS};
      BEGIN
        IF TG_OP = 'INSERT' THEN${COUNTERS.map(upsert('INSERT')).join('')}
        ELSIF TG_OP = 'UPDATE' THEN${COUNTERS.map(upsert('UPDATE')).join('')}
        ELSE${COUNTERS.map(upsert('DELETE')).join('')}
        END IF;
        RETURN NULL;
      END $$`;
}

export const ORDER_COUNTS_APPLY = orderCountsApply();

/** The counter tables and their keys (the slot aside), for benches that reshape all of them alike. */
export const ORDER_COUNTER_TABLES = COUNTERS.map((c) => ({ table: c.table, key: c.key.map((k) => k.column) }));
