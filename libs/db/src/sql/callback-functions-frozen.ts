/**
 * The texts migrations 1764400000000 (CALLBACK_FUNCTIONS) and 1764530000000 (RECORD_CALLBACK_ATTEMPT)
 * import, as they were when those migrations ran: NOT the live functions (callback-functions.ts).
 * Kept only until those migrations hold their own SQL text (the migrations freeze), then deleted.
 */
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

/**
 * record_callback_attempt(...): one attempt's outcome as the policy judged it. The attempt's log
 * row; the delivery's new state with its lease cleared (a failure only when no later attempt was
 * claimed meanwhile; a success always settles it); the (merchant, destination) circuit: a
 * success closes it, a failure counts and opens it at p_failures consecutive ones, 'none' (our
 * own failure) leaves it alone. Answers whether the delivery ended, whether this closed an open
 * circuit (its held jobs may go) or opened it (one failure of many at once), and the order's next
 * pending delivery once this one ended. Its result changed: a migration DROPs it before loading it.
 */
export const RECORD_CALLBACK_ATTEMPT_FROZEN = `CREATE OR REPLACE FUNCTION "record_callback_attempt"(p_delivery uuid, p_number integer, p_url text, p_http_status integer, p_duration_ms integer,
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

export const CALLBACK_FUNCTIONS = [CLAIM_CALLBACK_ATTEMPT, RECORD_CALLBACK_ATTEMPT_FROZEN];
export { RECORD_CALLBACK_ATTEMPT_FROZEN as RECORD_CALLBACK_ATTEMPT };
