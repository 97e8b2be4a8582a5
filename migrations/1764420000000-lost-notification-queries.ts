import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * SPEC 6, lost notifications: a pending order on a live channel is queried at the channel about
 * 1 min and 5 min after creation and just before it expires. `channel_queries` is the last of
 * those three checkpoints already taken, so each is taken once across all workers.
 * A constant default adds the column without rewriting the table.
 */
export class LostNotificationQueries1764420000000 implements MigrationInterface {
  name = 'LostNotificationQueries1764420000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "orders" ADD COLUMN "channel_queries" smallint NOT NULL DEFAULT 0 CHECK ("channel_queries" BETWEEN 0 AND 3)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "orders" DROP COLUMN "channel_queries"`);
  }
}
