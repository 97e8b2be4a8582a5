import type { MigrationInterface, QueryRunner } from 'typeorm';

/** claim_callback_attempt as this migration first loaded it (libs/db/src/sql/callback-functions.ts at fb53299), frozen. */
const CLAIM_CALLBACK_ATTEMPT = `CREATE OR REPLACE FUNCTION "claim_callback_attempt"(p_delivery uuid, p_destination text, p_lease_ms integer, p_probe_ms integer, p_max_attempts integer, p_interrupted text)
  RETURNS TABLE (kind text, wait_until timestamptz, attempt integer, probe boolean, event_id uuid, event_type text, payload jsonb,
                 notify_url text, api_key text, api_secret_enc text, api_secret_previous_enc text)
  VOLATILE LANGUAGE plpgsql AS $$
  #variable_conflict use_column
  DECLARE d record; c record; v_probe boolean := false;
  BEGIN
    SELECT x."status", x."lease_until", x."order_id", x."event_seq", x."attempts_made", x."merchant_id", x."event_id", x."notify_url"
      INTO d FROM "callback_deliveries" x WHERE x."id" = p_delivery FOR NO KEY UPDATE;
    IF NOT FOUND OR d."status" <> 'pending' THEN
      RETURN QUERY SELECT 'settled', NULL::timestamptz, NULL::int, false, NULL::uuid, NULL, NULL::jsonb, NULL, NULL, NULL, NULL; RETURN;
    END IF;
    IF d."lease_until" > now() THEN
      RETURN QUERY SELECT 'leased', d."lease_until", NULL::int, false, NULL::uuid, NULL, NULL::jsonb, NULL, NULL, NULL, NULL; RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM "callback_deliveries" e
                WHERE e."order_id" = d."order_id" AND e."status" = 'pending' AND e."event_seq" < d."event_seq") THEN
      RETURN QUERY SELECT 'waiting', NULL::timestamptz, NULL::int, false, NULL::uuid, NULL, NULL::jsonb, NULL, NULL, NULL, NULL; RETURN;
    END IF;
    IF d."attempts_made" >= p_max_attempts THEN
      UPDATE "callback_deliveries" SET "status" = 'failed', "last_error" = COALESCE("last_error", 'no attempts left'), "lease_until" = NULL, "updated_at" = now()
       WHERE "id" = p_delivery;
      RETURN QUERY SELECT 'exhausted', NULL::timestamptz, NULL::int, false, NULL::uuid, NULL, NULL::jsonb, NULL, NULL, NULL, NULL; RETURN;
    END IF;
    IF p_destination <> '' THEN
      SELECT k."open_since", k."next_probe_at" INTO c FROM "callback_circuits" k WHERE k."merchant_id" = d."merchant_id" AND k."destination" = p_destination;
      IF FOUND AND c."open_since" IS NOT NULL THEN
        UPDATE "callback_circuits" SET "next_probe_at" = now() + p_probe_ms * interval '1 millisecond', "updated_at" = now()
         WHERE "merchant_id" = d."merchant_id" AND "destination" = p_destination AND "next_probe_at" <= now();
        IF FOUND THEN
          v_probe := true;
        ELSE
          -- Keeps the sweep off it until the probe time: its job is parked until then.
          UPDATE "callback_deliveries" SET "next_attempt_at" = c."next_probe_at", "destination" = p_destination WHERE "id" = p_delivery;
          RETURN QUERY SELECT 'held', c."next_probe_at", NULL::int, false, NULL::uuid, NULL, NULL::jsonb, NULL, NULL, NULL, NULL; RETURN;
        END IF;
      END IF;
    END IF;
    UPDATE "callback_deliveries"
       SET "attempts_made" = d."attempts_made" + 1, "lease_until" = now() + p_lease_ms * interval '1 millisecond',
           "next_attempt_at" = now() + p_lease_ms * interval '1 millisecond', "destination" = p_destination, "updated_at" = now()
     WHERE "id" = p_delivery;
    INSERT INTO "callback_attempts" ("delivery_id", "number", "attempted_at", "duration_ms", "error")
    VALUES (p_delivery, d."attempts_made" + 1, now(), 0, p_interrupted);
    RETURN QUERY
    SELECT 'claimed', NULL::timestamptz, d."attempts_made" + 1, v_probe, e."id", e."type"::text, e."payload", d."notify_url"::text,
           m."api_key"::text, m."api_secret_enc"::text,
           -- During a rotation's grace the previous secret signs too (SPEC 3: both v1, entries).
           CASE WHEN m."api_secret_previous_until" > now() THEN m."api_secret_previous_enc" END::text
      FROM "order_events" e JOIN "merchants" m ON m."id" = d."merchant_id"
     WHERE e."id" = d."event_id";
  END
$$`;

/** record_callback_attempt as this migration first loaded it (fb53299), frozen; CircuitOpened1764530000000 replaced it. */
const RECORD_CALLBACK_ATTEMPT = `CREATE OR REPLACE FUNCTION "record_callback_attempt"(p_delivery uuid, p_number integer, p_url text, p_http_status integer, p_duration_ms integer,
    p_excerpt text, p_error text, p_status text, p_next_attempt_at timestamptz, p_circuit text, p_destination text, p_failures integer, p_probe_ms integer)
  RETURNS TABLE (ended boolean, circuit_closed boolean, next_delivery uuid, next_merchant_id integer, next_notify_url text)
  VOLATILE LANGUAGE plpgsql AS $$
  #variable_conflict use_column
  DECLARE v_order bigint; v_merchant integer; v_ended boolean := false; v_open timestamptz; v_closed boolean := false;
  BEGIN
    UPDATE "callback_attempts"
       SET "url" = left(p_url, 512), "http_status" = p_http_status, "duration_ms" = p_duration_ms, "response_excerpt" = p_excerpt, "error" = p_error
     WHERE "delivery_id" = p_delivery AND "number" = p_number;
    UPDATE "callback_deliveries"
       SET "status" = p_status, "last_error" = p_error, "next_attempt_at" = COALESCE(p_next_attempt_at, "next_attempt_at"), "lease_until" = NULL, "updated_at" = now()
     WHERE "id" = p_delivery AND "status" = 'pending' AND ("attempts_made" = p_number OR p_status = 'succeeded')
    RETURNING "order_id", "merchant_id" INTO v_order, v_merchant;
    v_ended := FOUND AND p_status <> 'pending';
    IF v_merchant IS NULL THEN
      SELECT "merchant_id" INTO v_merchant FROM "callback_deliveries" WHERE "id" = p_delivery;
    END IF;

    IF p_destination <> '' AND p_circuit = 'success' THEN
      -- A healthy key has no row to write: only a failing or open one is touched.
      UPDATE "callback_circuits" k SET "consecutive_failures" = 0, "open_since" = NULL, "next_probe_at" = NULL, "last_success_at" = now(), "updated_at" = now()
        FROM (SELECT "open_since" FROM "callback_circuits" WHERE "merchant_id" = v_merchant AND "destination" = p_destination FOR NO KEY UPDATE) old
       WHERE k."merchant_id" = v_merchant AND k."destination" = p_destination AND (k."consecutive_failures" > 0 OR k."open_since" IS NOT NULL)
      RETURNING old."open_since" INTO v_open;
      v_closed := v_open IS NOT NULL;
    ELSIF p_destination <> '' AND p_circuit = 'failure' THEN
      INSERT INTO "callback_circuits" AS k ("merchant_id", "destination", "consecutive_failures", "open_since", "next_probe_at", "last_failure_at", "updated_at")
      VALUES (v_merchant, p_destination, 1, CASE WHEN 1 >= p_failures THEN now() END, CASE WHEN 1 >= p_failures THEN now() + p_probe_ms * interval '1 millisecond' END, now(), now())
      ON CONFLICT ("merchant_id", "destination") DO UPDATE SET
        "consecutive_failures" = k."consecutive_failures" + 1,
        "open_since" = COALESCE(k."open_since", CASE WHEN k."consecutive_failures" + 1 >= p_failures THEN now() END),
        "next_probe_at" = CASE WHEN k."open_since" IS NOT NULL THEN k."next_probe_at"
                               WHEN k."consecutive_failures" + 1 >= p_failures THEN now() + p_probe_ms * interval '1 millisecond' END,
        "last_failure_at" = now(), "updated_at" = now();
    END IF;

    IF v_ended THEN
      RETURN QUERY SELECT true, v_closed, n."id", n."merchant_id", n."notify_url"::text FROM "callback_deliveries" n
        WHERE n."order_id" = v_order AND n."status" = 'pending' ORDER BY n."event_seq", n."created_at" LIMIT 1;
      IF FOUND THEN RETURN; END IF;
    END IF;
    RETURN QUERY SELECT v_ended, v_closed, NULL::uuid, NULL::int, NULL::text;
  END
$$`;

/**
 * Callbacks on BullMQ (SPEC 7 Durability, Cost, Fairness): one job per delivery instead of one
 * claim over every pending row under a lock shared by all workers. The delivery keeps the URL
 * resolved when it was written (no trigger, no COALESCE copies); its circuit is per (merchant,
 * destination), the destination coming from the one URL parser in TypeScript; the functions a
 * job calls touch rows by key only; their current bodies live in libs/db/src/sql/callback-functions.ts.
 */
export class CallbackJobs1764400000000 implements MigrationInterface {
  name = 'CallbackJobs1764400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION "claim_callback_deliveries"(integer, integer, integer, integer, integer, text)`);
    await q.query(`DROP TRIGGER "callback_deliveries_fill" ON "callback_deliveries"`);
    await q.query(`DROP FUNCTION "callback_delivery_fill"()`);
    await q.query(`DROP INDEX "ix_deliveries_pending_destination"`);
    await q.query(`DROP INDEX "ix_deliveries_leased"`);
    await q.query(`DROP TABLE "callback_destinations"`);

    await q.query(`ALTER TABLE "callback_deliveries" ADD COLUMN "notify_url" varchar(512)`);
    // Written once, here, for the rows before this migration; new rows carry it from their writer.
    await q.query(`UPDATE "callback_deliveries" d SET "notify_url" = COALESCE(r."notify_url", o."notify_url", m."notify_url")
       FROM "order_events" e JOIN "orders" o ON o."id" = e."order_id" JOIN "merchants" m ON m."id" = e."merchant_id" LEFT JOIN "refunds" r ON r."id" = e."refund_id"
      WHERE e."id" = d."event_id"`);
    // The regex key is gone: the worker writes the parser's destination at its first claim.
    await q.query(`UPDATE "callback_deliveries" SET "destination" = '' WHERE "status" = 'pending'`);
    await q.query(`DROP FUNCTION "callback_destination"(text)`);

    // A circuit's held deliveries, released when its probe succeeds.
    await q.query(`CREATE INDEX "ix_deliveries_pending_key" ON "callback_deliveries" ("merchant_id", "destination") WHERE "status" = 'pending'`);
    await q.query(`CREATE TABLE "callback_circuits" (
      "merchant_id" integer NOT NULL REFERENCES "merchants" ("id"),
      "destination" varchar(600) NOT NULL,
      "consecutive_failures" integer NOT NULL DEFAULT 0,
      "open_since" timestamptz,
      "next_probe_at" timestamptz,
      "last_success_at" timestamptz,
      "last_failure_at" timestamptz,
      "updated_at" timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY ("merchant_id", "destination"))`);
    await q.query(`CREATE INDEX "ix_circuits_open" ON "callback_circuits" ("merchant_id") WHERE "open_since" IS NOT NULL`);
    await q.query(CLAIM_CALLBACK_ATTEMPT);
    await q.query(RECORD_CALLBACK_ATTEMPT);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      `DROP FUNCTION "record_callback_attempt"(uuid, integer, text, integer, integer, text, text, text, timestamptz, text, text, integer, integer)`,
    );
    await q.query(`DROP FUNCTION "claim_callback_attempt"(uuid, text, integer, integer, integer, text)`);
    await q.query(`DROP TABLE "callback_circuits"`);
    await q.query(`DROP INDEX "ix_deliveries_pending_key"`);
    await q.query(`ALTER TABLE "callback_deliveries" DROP COLUMN "notify_url"`);
  }
}
