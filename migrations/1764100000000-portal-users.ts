import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The merchant portal (SPEC 8a): its users, their invitations, server-side sessions and the
 * sign-in lockout. Tokens and session ids are stored only as SHA-256 hashes, so a copy of the
 * database signs nobody in. An index on paid orders feeds the overview's 14-day chart.
 */
export class PortalUsers1764100000000 implements MigrationInterface {
  name = 'PortalUsers1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "merchant_users" (
      "id" SERIAL PRIMARY KEY,
      "merchant_id" integer NOT NULL REFERENCES "merchants" ("id"),
      "email" varchar(254) NOT NULL,
      "password_hash" text NOT NULL,
      "status" varchar(16) NOT NULL DEFAULT 'active' CHECK ("status" IN ('active', 'disabled')),
      "password_changed_at" timestamptz NOT NULL DEFAULT now(),
      "created_at" timestamptz NOT NULL DEFAULT now(),
      "updated_at" timestamptz NOT NULL DEFAULT now())`);
    // One person, one sign-in name, whatever the case they type it in.
    await q.query(`CREATE UNIQUE INDEX "uq_merchant_users_email" ON "merchant_users" (lower("email"))`);
    await q.query(`CREATE INDEX "ix_merchant_users_merchant" ON "merchant_users" ("merchant_id")`);

    await q.query(`CREATE TABLE "merchant_user_invitations" (
      "id" SERIAL PRIMARY KEY,
      "merchant_id" integer NOT NULL REFERENCES "merchants" ("id"),
      "email" varchar(254) NOT NULL,
      "token_hash" char(64) NOT NULL,
      "expires_at" timestamptz NOT NULL,
      "used_at" timestamptz,
      "created_at" timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE UNIQUE INDEX "uq_invitations_token_hash" ON "merchant_user_invitations" ("token_hash")`);
    await q.query(`CREATE INDEX "ix_invitations_email" ON "merchant_user_invitations" (lower("email"))`);

    await q.query(`CREATE TABLE "portal_sessions" (
      "id_hash" char(64) PRIMARY KEY,
      "user_id" integer NOT NULL REFERENCES "merchant_users" ("id") ON DELETE CASCADE,
      "expires_at" timestamptz NOT NULL,
      "last_seen_at" timestamptz NOT NULL DEFAULT now(),
      "created_at" timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE INDEX "ix_portal_sessions_user" ON "portal_sessions" ("user_id")`);
    await q.query(`CREATE INDEX "ix_portal_sessions_expires" ON "portal_sessions" ("expires_at")`);

    await q.query(`CREATE TABLE "portal_sign_in_failures" (
      "email" varchar(254) NOT NULL,
      "failed_at" timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE INDEX "ix_sign_in_failures_email" ON "portal_sign_in_failures" ("email", "failed_at")`);
    await q.query(`CREATE TABLE "portal_sign_in_locks" (
      "email" varchar(254) PRIMARY KEY,
      "locked_until" timestamptz NOT NULL)`);

    await q.query(`CREATE INDEX "ix_orders_merchant_paid" ON "orders" ("merchant_id", "paid_at") WHERE "paid_at" IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "ix_orders_merchant_paid"`);
    for (const table of ['portal_sign_in_locks', 'portal_sign_in_failures', 'portal_sessions', 'merchant_user_invitations', 'merchant_users']) {
      await q.query(`DROP TABLE "${table}"`);
    }
  }
}
