import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Orders paid or confirmed but not completed: the stuck-money gauge counts those older than 10
 * minutes at every refresh, and order:stuck lists them. Few rows are ever in these states, so a
 * partial index keeps both reads small however many orders the table holds.
 */
export class StuckOrdersIndex1764620100000 implements MigrationInterface {
  name = 'StuckOrdersIndex1764620100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX "ix_orders_unsettled" ON "orders" ("updated_at") WHERE "status" IN ('paid', 'confirmed')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "ix_orders_unsettled"`);
  }
}
