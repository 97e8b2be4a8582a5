import type { MigrationInterface, QueryRunner } from 'typeorm';
import { ORDER_COUNTER_TABLES, orderCountsApplyFunction } from './functions/order-counts-apply';

/**
 * Splits each order_counts and order_day_counts key into slots (see ORDER_COUNT_SLOTS): before,
 * every order of a merchant upserted the same two rows and every transition four, so all of a
 * big merchant's writes queued on those row locks until each transaction committed (550
 * inserts/s for one merchant at 32 clients, 1,900-2,100/s spread over 65). Today's rows become
 * slot 0, so every total stays exactly what it was; reads already sum over the rows of a key.
 */
export class OrderCountSlots1764410000000 implements MigrationInterface {
  name = 'OrderCountSlots1764410000000';

  async up(q: QueryRunner): Promise<void> {
    // Writers wait until the new trigger is in place, so no order changes between the two shapes.
    await q.query(`LOCK TABLE "orders" IN SHARE ROW EXCLUSIVE MODE`);
    for (const { table, key } of ORDER_COUNTER_TABLES) {
      await q.query(`ALTER TABLE "${table}" ADD COLUMN "slot" smallint NOT NULL DEFAULT 0`);
      await q.query(`ALTER TABLE "${table}" ALTER COLUMN "slot" DROP DEFAULT`);
      await q.query(`ALTER TABLE "${table}" DROP CONSTRAINT "${table}_pkey", ADD PRIMARY KEY (${[...key, 'slot'].map((c) => `"${c}"`).join(', ')})`);
    }
    await q.query(orderCountsApplyFunction(true));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE "orders" IN SHARE ROW EXCLUSIVE MODE`);
    for (const { table, key } of ORDER_COUNTER_TABLES) {
      const columns = key.map((c) => `"${c}"`).join(', ');
      // Every other slot folded into slot 0, which then holds each key's whole count.
      await q.query(`WITH gone AS (DELETE FROM "${table}" WHERE "slot" <> 0 RETURNING ${columns}, "n")
        INSERT INTO "${table}" (${columns}, "slot", "n") SELECT ${columns}, 0, sum("n") FROM gone GROUP BY ${columns}
        ON CONFLICT (${columns}, "slot") DO UPDATE SET "n" = "${table}"."n" + EXCLUDED."n"`);
      await q.query(`ALTER TABLE "${table}" DROP CONSTRAINT "${table}_pkey", ADD PRIMARY KEY (${columns})`);
      await q.query(`ALTER TABLE "${table}" DROP COLUMN "slot"`);
    }
    await q.query(orderCountsApplyFunction(false));
  }
}
