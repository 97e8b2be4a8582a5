import type { MigrationInterface, QueryRunner } from 'typeorm';

/** record_callback_attempt as this migration first loaded it (libs/db/src/sql/callback-functions.ts at 0cd0f22), frozen. */
const RECORD_CALLBACK_ATTEMPT = `CREATE OR REPLACE FUNCTION "record_callback_attempt"(p_delivery uuid, p_number integer, p_url text, p_http_status integer, p_duration_ms integer,
    p_excerpt text, p_error text, p_status text, p_next_attempt_at timestamptz, p_circuit text, p_destination text, p_failures integer, p_probe_ms integer)
  RETURNS TABLE (ended boolean, circuit_closed boolean, circuit_opened boolean, next_delivery uuid, next_merchant_id integer, next_notify_url text)
  VOLATILE LANGUAGE plpgsql AS $$
  #variable_conflict use_column
  DECLARE v_order bigint; v_merchant integer; v_ended boolean := false; v_open timestamptz; v_closed boolean := false; v_opened boolean := false;
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
      -- Read under its lock, so of several failures at once exactly one sees it move from closed to open.
      LOOP
        SELECT "open_since" INTO v_open FROM "callback_circuits" WHERE "merchant_id" = v_merchant AND "destination" = p_destination FOR NO KEY UPDATE;
        IF FOUND THEN
          UPDATE "callback_circuits" k SET
            "consecutive_failures" = k."consecutive_failures" + 1,
            "open_since" = COALESCE(k."open_since", CASE WHEN k."consecutive_failures" + 1 >= p_failures THEN now() END),
            "next_probe_at" = CASE WHEN k."open_since" IS NOT NULL THEN k."next_probe_at"
                                   WHEN k."consecutive_failures" + 1 >= p_failures THEN now() + p_probe_ms * interval '1 millisecond' END,
            "last_failure_at" = now(), "updated_at" = now()
           WHERE k."merchant_id" = v_merchant AND k."destination" = p_destination
          RETURNING v_open IS NULL AND k."open_since" IS NOT NULL INTO v_opened;
          EXIT;
        END IF;
        INSERT INTO "callback_circuits" ("merchant_id", "destination", "consecutive_failures", "open_since", "next_probe_at", "last_failure_at", "updated_at")
        VALUES (v_merchant, p_destination, 1, CASE WHEN 1 >= p_failures THEN now() END, CASE WHEN 1 >= p_failures THEN now() + p_probe_ms * interval '1 millisecond' END, now(), now())
        ON CONFLICT ("merchant_id", "destination") DO NOTHING
        RETURNING "open_since" IS NOT NULL INTO v_opened;
        EXIT WHEN FOUND;
        -- Another first failure of this key inserted it meanwhile: this one counts on that row.
      END LOOP;
    END IF;

    IF v_ended THEN
      RETURN QUERY SELECT true, v_closed, v_opened, n."id", n."merchant_id", n."notify_url"::text FROM "callback_deliveries" n
        WHERE n."order_id" = v_order AND n."status" = 'pending' ORDER BY n."event_seq", n."created_at" LIMIT 1;
      IF FOUND THEN RETURN; END IF;
    END IF;
    RETURN QUERY SELECT v_ended, v_closed, v_opened, NULL::uuid, NULL::int, NULL::text;
  END
$$`;

const RECORD_SIGNATURE = `"record_callback_attempt"(uuid, integer, text, integer, integer, text, text, text, timestamptz, text, text, integer, integer)`;

/**
 * record_callback_attempt answers circuit_opened too: whether this failure is the one that opened
 * its (merchant, destination) circuit, so the worker logs 'opened' once even when several failures
 * of one key are recorded at once. CREATE OR REPLACE cannot change a result type: dropped first.
 */
export class CircuitOpened1764530000000 implements MigrationInterface {
  name = 'CircuitOpened1764530000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION ${RECORD_SIGNATURE}`);
    await q.query(RECORD_CALLBACK_ATTEMPT);
  }

  async down(): Promise<void> {
    // Kept: the code before this reads the function's columns by name and ignores the added one.
  }
}
