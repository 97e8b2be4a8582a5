import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The queue backend the deployment's processes use (SPEC 10), recorded by the first process that
 * starts: a process whose QUEUE_BACKEND differs refuses to start instead of taking jobs from a
 * queue nobody else feeds. One row, by construction.
 */
export class QueueBackend1764620000000 implements MigrationInterface {
  name = 'QueueBackend1764620000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "queue_backend" (
      "id" smallint PRIMARY KEY CHECK ("id" = 1),
      "backend" varchar(16) NOT NULL CHECK ("backend" IN ('redis', 'postgres')),
      "recorded_at" timestamptz NOT NULL DEFAULT now())`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "queue_backend"`);
  }
}
