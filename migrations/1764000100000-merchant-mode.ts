import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Live and test merchants (SPEC 5): test merchants pay only through the sandbox, live ones
 * never do, so sandbox money cannot reach a live balance. Every merchant made before this rule
 * is live (the column's default fills them, a catalogue-only change), keeping its api_key.
 */
export class MerchantMode1764000100000 implements MigrationInterface {
  name = 'MerchantMode1764000100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE "merchants" ADD COLUMN "mode" varchar(8) NOT NULL DEFAULT 'live' CONSTRAINT "merchants_mode_check" CHECK ("mode" IN ('live', 'test'))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "merchants" DROP COLUMN "mode"`);
  }
}
