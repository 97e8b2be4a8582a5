import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The retention sweep walks these from the oldest row, a batch at a time: ended deliveries by
 * when they ended, events by when they were written, circuits by their last change.
 */
export class RetentionIndexes1764480000000 implements MigrationInterface {
  name = 'RetentionIndexes1764480000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX "ix_deliveries_ended" ON "callback_deliveries" ("updated_at") WHERE "status" <> 'pending'`);
    await q.query(`CREATE INDEX "ix_order_events_created" ON "order_events" ("created_at")`);
    await q.query(`CREATE INDEX "ix_circuits_updated" ON "callback_circuits" ("updated_at")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "ix_circuits_updated"`);
    await q.query(`DROP INDEX "ix_order_events_created"`);
    await q.query(`DROP INDEX "ix_deliveries_ended"`);
  }
}
