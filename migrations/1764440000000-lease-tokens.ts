import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Whose lease it is: each claim of a refund or payout writes a fresh token, and a worker
 * releases the lease only while it still carries its token. A worker whose channel call
 * outlived its lease can then no longer free the refund or payout a second worker now holds.
 */
export class LeaseTokens1764440000000 implements MigrationInterface {
  name = 'LeaseTokens1764440000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "refunds" ADD COLUMN "lease_token" uuid`);
    await q.query(`ALTER TABLE "payouts" ADD COLUMN "lease_token" uuid`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "payouts" DROP COLUMN "lease_token"`);
    await q.query(`ALTER TABLE "refunds" DROP COLUMN "lease_token"`);
  }
}
