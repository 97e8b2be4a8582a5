import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The first schema. Generated from the entities with `npm run migration:generate`, then
 * reviewed: foreign keys and CHECK constraints added so the database itself refuses an
 * impossible state or a negative amount.
 */
export class InitialSchema1763700000000 implements MigrationInterface {
  name = 'InitialSchema1763700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "merchants" (
      "id" SERIAL PRIMARY KEY,
      "name" varchar(128) NOT NULL,
      "status" varchar(16) NOT NULL DEFAULT 'active' CHECK ("status" IN ('active', 'disabled')),
      "api_key" varchar(64) NOT NULL,
      "api_secret_enc" text NOT NULL,
      "notify_url" varchar(512),
      "deposit_rate" numeric(10,8) NOT NULL DEFAULT 0 CHECK ("deposit_rate" >= 0 AND "deposit_rate" <= 1),
      "created_at" timestamptz NOT NULL DEFAULT now(),
      "updated_at" timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE UNIQUE INDEX "uq_merchants_api_key" ON "merchants" ("api_key")`);

    await q.query(`CREATE TABLE "channels" (
      "id" SERIAL PRIMARY KEY,
      "category" varchar(16) NOT NULL CHECK ("category" IN ('processor', 'remotepay', 'warehouse')),
      "name" varchar(128) NOT NULL,
      "pay_method" varchar(64) NOT NULL,
      "adapter" varchar(32) NOT NULL,
      "config_enc" text NOT NULL,
      "min_fen" bigint NOT NULL DEFAULT 1 CHECK ("min_fen" > 0),
      "max_fen" bigint NOT NULL DEFAULT 100000000,
      "default_rate" numeric(10,8) NOT NULL DEFAULT 0 CHECK ("default_rate" >= 0 AND "default_rate" <= 1),
      "enabled" boolean NOT NULL DEFAULT true,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      "updated_at" timestamptz NOT NULL DEFAULT now(),
      CHECK ("max_fen" >= "min_fen"))`);

    await q.query(`CREATE TABLE "merchant_channels" (
      "merchant_id" integer NOT NULL REFERENCES "merchants" ("id"),
      "channel_id" integer NOT NULL REFERENCES "channels" ("id"),
      "rate" numeric(10,8) CHECK ("rate" >= 0 AND "rate" <= 1),
      "created_at" timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY ("merchant_id", "channel_id"))`);
    await q.query(`CREATE INDEX "ix_merchant_channels_channel" ON "merchant_channels" ("channel_id")`);

    await q.query(`CREATE TABLE "orders" (
      "id" BIGSERIAL PRIMARY KEY,
      "order_no" varchar(22) NOT NULL,
      "merchant_id" integer NOT NULL REFERENCES "merchants" ("id"),
      "channel_id" integer NOT NULL REFERENCES "channels" ("id"),
      "order_type" smallint NOT NULL CHECK ("order_type" IN (1, 2)),
      "status" varchar(16) NOT NULL CHECK ("status" IN ('pending', 'paid', 'confirmed', 'completed', 'cancelled')),
      "payment_method" varchar(16),
      "cny_fen" bigint NOT NULL CHECK ("cny_fen" > 0),
      "service_rate" numeric(10,8) NOT NULL,
      "service_fen" bigint NOT NULL CHECK ("service_fen" >= 0),
      "deposit_rate" numeric(10,8) NOT NULL,
      "deposit_fen" bigint NOT NULL CHECK ("deposit_fen" >= 0),
      "merchant_actual_fen" bigint NOT NULL CHECK ("merchant_actual_fen" >= 0),
      "merchant_order_no" varchar(64),
      "notify_url" varchar(512),
      "customer_name" varchar(64),
      "request_hash" varchar(64) NOT NULL,
      "pay_url" text,
      "channel_trade_no" varchar(128),
      "late_payment" boolean NOT NULL DEFAULT false,
      "paid_at" timestamptz,
      "expires_at" timestamptz NOT NULL,
      "created_at" timestamptz NOT NULL,
      "updated_at" timestamptz NOT NULL,
      CHECK ("cny_fen" = "service_fen" + "deposit_fen" + "merchant_actual_fen"))`);
    await q.query(`CREATE UNIQUE INDEX "uq_orders_order_no" ON "orders" ("order_no")`);
    await q.query(`CREATE UNIQUE INDEX "uq_orders_merchant_order_no" ON "orders" ("merchant_id", "merchant_order_no") WHERE "merchant_order_no" IS NOT NULL`);
    // orderQueryList reads these backwards: newest first, then order_no desc.
    await q.query(`CREATE INDEX "ix_orders_merchant_created" ON "orders" ("merchant_id", "created_at", "order_no")`);
    await q.query(`CREATE INDEX "ix_orders_merchant_status_created" ON "orders" ("merchant_id", "status", "created_at", "order_no")`);
    await q.query(`CREATE INDEX "ix_orders_pending_expiry" ON "orders" ("expires_at") WHERE "status" = 'pending'`);

    await q.query(`CREATE TABLE "balances" (
      "merchant_id" integer PRIMARY KEY REFERENCES "merchants" ("id"),
      "available_fen" bigint NOT NULL DEFAULT 0,
      "deposit_fen" bigint NOT NULL DEFAULT 0,
      "updated_at" timestamptz NOT NULL DEFAULT now())`);

    await q.query(`CREATE TABLE "ledger_entries" (
      "id" BIGSERIAL PRIMARY KEY,
      "merchant_id" integer NOT NULL REFERENCES "merchants" ("id"),
      "order_id" bigint NOT NULL REFERENCES "orders" ("id"),
      "kind" varchar(32) NOT NULL,
      "amount_fen" bigint NOT NULL,
      "created_at" timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE UNIQUE INDEX "uq_ledger_order_kind" ON "ledger_entries" ("order_id", "kind")`);
    await q.query(`CREATE INDEX "ix_ledger_merchant" ON "ledger_entries" ("merchant_id", "created_at")`);

    await q.query(`CREATE TABLE "order_events" (
      "id" uuid PRIMARY KEY,
      "order_id" bigint NOT NULL REFERENCES "orders" ("id"),
      "merchant_id" integer NOT NULL REFERENCES "merchants" ("id"),
      "type" varchar(32) NOT NULL CHECK ("type" IN ('order.paid', 'order.completed', 'order.cancelled')),
      "payload" jsonb NOT NULL,
      "created_at" timestamptz(6) NOT NULL DEFAULT now())`);
    await q.query(`CREATE INDEX "ix_order_events_order" ON "order_events" ("order_id", "created_at")`);

    await q.query(`CREATE TABLE "callback_deliveries" (
      "id" uuid PRIMARY KEY,
      "event_id" uuid NOT NULL REFERENCES "order_events" ("id"),
      "order_id" bigint NOT NULL REFERENCES "orders" ("id"),
      "merchant_id" integer NOT NULL REFERENCES "merchants" ("id"),
      "status" varchar(16) NOT NULL DEFAULT 'pending' CHECK ("status" IN ('pending', 'succeeded', 'failed')),
      "attempts_made" integer NOT NULL DEFAULT 0,
      "next_attempt_at" timestamptz NOT NULL,
      "last_error" text,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      "updated_at" timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE INDEX "ix_deliveries_event" ON "callback_deliveries" ("event_id")`);
    await q.query(`CREATE INDEX "ix_deliveries_due" ON "callback_deliveries" ("next_attempt_at") WHERE "status" = 'pending'`);

    await q.query(`CREATE TABLE "callback_attempts" (
      "id" BIGSERIAL PRIMARY KEY,
      "delivery_id" uuid NOT NULL REFERENCES "callback_deliveries" ("id"),
      "number" integer NOT NULL,
      "attempted_at" timestamptz NOT NULL,
      "url" varchar(512),
      "http_status" integer,
      "duration_ms" integer NOT NULL,
      "response_excerpt" text,
      "error" text)`);
    await q.query(`CREATE UNIQUE INDEX "uq_attempts_delivery_number" ON "callback_attempts" ("delivery_id", "number")`);

    await q.query(`CREATE TABLE "nonces" (
      "api_key" varchar(64) NOT NULL,
      "nonce" varchar(64) NOT NULL,
      "expires_at" timestamptz NOT NULL,
      PRIMARY KEY ("api_key", "nonce"))`);
    await q.query(`CREATE INDEX "ix_nonces_expires" ON "nonces" ("expires_at")`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of [
      'nonces',
      'callback_attempts',
      'callback_deliveries',
      'order_events',
      'ledger_entries',
      'balances',
      'orders',
      'merchant_channels',
      'channels',
      'merchants',
    ]) {
      await q.query(`DROP TABLE "${table}"`);
    }
  }
}
