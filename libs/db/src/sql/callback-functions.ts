/**
 * The SQL behind a callback attempt, in one source file. A migration holds the text it ran as
 * literal text (never an import of this file): a change here ships with a new migration carrying
 * the new text. What follows an attempt is decided in TypeScript (DeliveryPolicy, Circuit); this
 * only stores it, touching rows by key: the delivery, its order's pending rows, one circuit row.
 */

/**
 * SPEC 7 Order, the one place it is written: delivery `d` is the first pending delivery of its
 * order (no earlier event of the order has a pending delivery). Only such a delivery has a job;
 * the end of one names the next (record_callback_attempt), and the sweep looks only at these.
 */
export function orderHeadSql(d: string): string {
  return `${d}."status" = 'pending' AND NOT EXISTS (SELECT 1 FROM "callback_deliveries" e WHERE e."order_id" = ${d}."order_id" AND e."status" = 'pending' AND e."event_seq" < ${d}."event_seq")`;
}

/**
 * record_callback_attempt(...): one attempt, once it was sent, as the policy judged it, in one
 * call: the delivery's new state (guarded by its attempt count, so a duplicate run of one attempt
 * records once; a success always settles a pending delivery), its attempt's log row, the key's
 * circuit mirror when the gate reported a transition (p_circuit: opened, probe_failed, closed;
 * '' for none), and, when the delivery ended, its order's next delivery (which then gets its job).
 */
export const CALLBACK_RECORD_FUNCTION = `CREATE OR REPLACE FUNCTION "record_callback_attempt"(p_delivery uuid, p_number integer, p_url text, p_http_status integer, p_duration_ms integer,
    p_excerpt text, p_error text, p_status text, p_next_attempt_at timestamptz, p_destination text, p_circuit text, p_failures integer, p_next_probe_at timestamptz)
  RETURNS TABLE (recorded boolean, ended boolean, next_delivery uuid, next_merchant_id integer, next_notify_url text)
  VOLATILE LANGUAGE plpgsql AS $$
  #variable_conflict use_column
  DECLARE v_order bigint; v_merchant integer; v_recorded boolean; v_ended boolean;
  BEGIN
    UPDATE "callback_deliveries"
       SET "status" = p_status, "attempts_made" = p_number, "last_error" = p_error, "next_attempt_at" = COALESCE(p_next_attempt_at, "next_attempt_at"),
           "destination" = p_destination, "updated_at" = now()
     WHERE "id" = p_delivery AND "status" = 'pending' AND ("attempts_made" = p_number - 1 OR (p_status = 'succeeded' AND "attempts_made" < p_number))
    RETURNING "order_id", "merchant_id" INTO v_order, v_merchant;
    v_recorded := FOUND;
    v_ended := FOUND AND p_status <> 'pending';
    IF v_recorded THEN
      INSERT INTO "callback_attempts" ("delivery_id", "number", "attempted_at", "url", "http_status", "duration_ms", "response_excerpt", "error")
      VALUES (p_delivery, p_number, now() - p_duration_ms * interval '1 millisecond', left(p_url, 512), p_http_status, p_duration_ms, p_excerpt, p_error);
    END IF;
    IF p_circuit <> '' AND p_destination <> '' THEN
      IF v_merchant IS NULL THEN SELECT "merchant_id" INTO v_merchant FROM "callback_deliveries" WHERE "id" = p_delivery; END IF;
      INSERT INTO "callback_circuits" AS k ("merchant_id", "destination", "consecutive_failures", "open_since", "next_probe_at", "last_success_at", "last_failure_at", "updated_at")
      VALUES (v_merchant, p_destination, p_failures, CASE WHEN p_circuit = 'closed' THEN NULL ELSE now() END, CASE WHEN p_circuit = 'closed' THEN NULL ELSE p_next_probe_at END,
              CASE WHEN p_circuit = 'closed' THEN now() END, CASE WHEN p_circuit = 'closed' THEN NULL ELSE now() END, now())
      ON CONFLICT ("merchant_id", "destination") DO UPDATE SET
        "consecutive_failures" = EXCLUDED."consecutive_failures",
        "open_since" = CASE WHEN p_circuit = 'closed' THEN NULL WHEN p_circuit = 'opened' THEN now() ELSE COALESCE(k."open_since", now()) END,
        "next_probe_at" = EXCLUDED."next_probe_at",
        "last_success_at" = COALESCE(EXCLUDED."last_success_at", k."last_success_at"),
        "last_failure_at" = COALESCE(EXCLUDED."last_failure_at", k."last_failure_at"),
        "updated_at" = now();
    END IF;
    IF v_ended THEN
      RETURN QUERY SELECT true, true, n."id", n."merchant_id", n."notify_url"::text FROM "callback_deliveries" n
        WHERE n."order_id" = v_order AND ${orderHeadSql('n')} ORDER BY n."event_seq", n."created_at" LIMIT 1;
      IF FOUND THEN RETURN; END IF;
    END IF;
    RETURN QUERY SELECT v_recorded, v_ended, NULL::uuid, NULL::int, NULL::text;
  END
$$`;

/**
 * SPEC 7 Fairness's destination (scheme://host:port, the default port written out) of a stored
 * notify URL. Every stored URL passed the one parser (WHATWG URL) and is kept in its canonical
 * form (no userinfo, lower-case host, IPv6 in brackets, default port left out, a path), so this
 * split agrees with parseNotifyUrl's destination (test/callback-record-rules.e2e-spec.ts); the
 * worker writes the parser's own at each record anyway.
 */
export const CALLBACK_DESTINATION_OF = `CREATE OR REPLACE FUNCTION "callback_destination_of"(p_url text) RETURNS text IMMUTABLE LANGUAGE sql AS $$
  SELECT CASE WHEN m IS NULL THEN '' ELSE m[1] || '://' || m[2] || ':' || COALESCE(m[3], CASE m[1] WHEN 'https' THEN '443' ELSE '80' END) END
    FROM (SELECT regexp_match(p_url, '^(https?)://(\\[[^]/]*\\]|[^/:?#]*)(?::([0-9]+))?([/?#]|$)') AS m) x
$$`;

/**
 * A delivery as it is written, whoever writes it (the outbox in each lifecycle, settle_order,
 * callbackResend, callbackRecover): SPEC 7 Address, an event whose order and merchant have no
 * address is recorded as `no_address` (no job, no attempt; callbackResend or callbackRecover
 * write a new one once there is an address); else its key's destination, so the pages and tools
 * count what a circuit holds before its first attempt.
 */
export const CALLBACK_DELIVERY_WRITTEN = `CREATE OR REPLACE FUNCTION "callback_delivery_written"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF NEW."notify_url" IS NULL THEN
      IF NEW."status" = 'pending' THEN NEW."status" := 'no_address'; END IF;
    ELSIF NEW."destination" = '' THEN
      NEW."destination" := "callback_destination_of"(NEW."notify_url");
    END IF;
    RETURN NEW;
  END
$$`;
