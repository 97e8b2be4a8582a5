import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A check value sealed with the master key when the database is first used: every app opens it
 * at start and refuses to run with a key that cannot (a wrong MASTER_KEY would otherwise answer
 * 50000 to every signed request and burn callback attempts). One row, by construction.
 */
export class MasterKeyCheck1764460000000 implements MigrationInterface {
  name = 'MasterKeyCheck1764460000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "master_key_check" (
      "id" smallint PRIMARY KEY CHECK ("id" = 1),
      "sealed" text NOT NULL,
      "created_at" timestamptz NOT NULL DEFAULT now())`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "master_key_check"`);
  }
}
