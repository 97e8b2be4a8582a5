import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The operator CLI's audit trail: who ran which command with which options (secrets left out),
 * when, and how it ended. Appended by every command that reached the database; never updated.
 */
export class OperatorActions1764620300000 implements MigrationInterface {
  name = 'OperatorActions1764620300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "operator_actions" (
      "id" BIGSERIAL PRIMARY KEY,
      "at" timestamptz NOT NULL DEFAULT now(),
      "actor" varchar(256) NOT NULL,
      "command" varchar(64) NOT NULL,
      "options" jsonb NOT NULL,
      "outcome" varchar(16) NOT NULL CHECK ("outcome" IN ('ok', 'refused', 'failed')),
      "error" varchar(512))`);
    await q.query(`CREATE INDEX "ix_operator_actions_at" ON "operator_actions" ("at")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "operator_actions"`);
  }
}
