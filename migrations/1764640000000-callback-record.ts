import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 36: one owner per part of a callback delivery's state (docs/callbacks-design.md). The
 * BullMQ job is the lease now, so claim_callback_attempt (lease, placeholder attempt, order and
 * circuit checks before each attempt) goes; record_callback_attempt writes an attempt once, after
 * it, with the key's circuit mirrored from the gate's transition. One trigger, whoever writes a
 * delivery: an event with no address is recorded as `no_address` (SPEC 7 Address; the pending
 * ones of today become that), else its key's destination is written with it. The texts are what libs/db/src/sql/callback-functions.ts
 * held when this was written, kept here as they ran.
 */
const RECORD_CALLBACK_ATTEMPT = `CREATE OR REPLACE FUNCTION "record_callback_attempt"(p_delivery uuid, p_number integer, p_url text, p_http_status integer, p_duration_ms integer,
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
        WHERE n."order_id" = v_order AND n."status" = 'pending' AND NOT EXISTS (SELECT 1 FROM "callback_deliveries" e WHERE e."order_id" = n."order_id" AND e."status" = 'pending' AND e."event_seq" < n."event_seq") ORDER BY n."event_seq", n."created_at" LIMIT 1;
      IF FOUND THEN RETURN; END IF;
    END IF;
    RETURN QUERY SELECT v_recorded, v_ended, NULL::uuid, NULL::int, NULL::text;
  END
$$`;

const CALLBACK_DESTINATION_OF = `CREATE OR REPLACE FUNCTION "callback_destination_of"(p_url text) RETURNS text IMMUTABLE LANGUAGE sql AS $$
  SELECT CASE WHEN m IS NULL THEN '' ELSE m[1] || '://' || m[2] || ':' || COALESCE(m[3], CASE m[1] WHEN 'https' THEN '443' ELSE '80' END) END
    FROM (SELECT regexp_match(p_url, '^(https?)://(\\[[^]/]*\\]|[^/:?#]*)(?::([0-9]+))?([/?#]|$)') AS m) x
$$`;

const CALLBACK_DELIVERY_WRITTEN = `CREATE OR REPLACE FUNCTION "callback_delivery_written"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF NEW."notify_url" IS NULL THEN
      IF NEW."status" = 'pending' THEN NEW."status" := 'no_address'; END IF;
    ELSIF NEW."destination" = '' THEN
      NEW."destination" := "callback_destination_of"(NEW."notify_url");
    END IF;
    RETURN NEW;
  END
$$`;

/** settle_order with SPEC 7 Order's one predicate: a delivery written `no_address` is no head and gets no job. */
const SETTLE_ORDER = `CREATE OR REPLACE FUNCTION "settle_order"(p_order bigint, p_from varchar[], p_order_types smallint[], p_to varchar, p_paid boolean,
    p_channel_trade_no varchar, p_event_ids uuid[], p_event_types varchar[], p_payloads jsonb[], p_delivery_ids uuid[])
  RETURNS TABLE (delivery_id uuid, head boolean, merchant_id integer, notify_url text, late_payment boolean)
  VOLATILE LANGUAGE plpgsql AS $$
  #variable_conflict use_column
  DECLARE o record; v_times jsonb;
  BEGIN
    UPDATE "orders" x SET "status" = p_to, "updated_at" = GREATEST(now(), x."created_at"),
           "paid_at" = CASE WHEN p_paid THEN now() ELSE x."paid_at" END,
           "late_payment" = x."late_payment" OR (p_paid AND x."status" = 'cancelled'),
           "channel_trade_no" = COALESCE(p_channel_trade_no, x."channel_trade_no")
     WHERE x."id" = p_order AND (x."status", x."order_type") IN (SELECT * FROM unnest(p_from, p_order_types))
    RETURNING x."id", x."merchant_id", x."updated_at", x."paid_at", x."late_payment", x."merchant_actual_fen", x."deposit_fen" INTO o;
    IF NOT FOUND THEN RETURN; END IF;
    -- Unix seconds, as unixSeconds() in TypeScript.
    v_times := jsonb_build_object('updatetime', floor(extract(epoch FROM o."updated_at"))::bigint,
                                  'paid_at', floor(extract(epoch FROM o."paid_at"))::bigint);
    FOR i IN 1 .. cardinality(p_event_ids) LOOP
      RETURN QUERY
        WITH "event" AS (
          INSERT INTO "order_events" ("id", "order_id", "merchant_id", "type", "payload")
          VALUES (p_event_ids[i], o."id", o."merchant_id", p_event_types[i], p_payloads[i] || v_times)
          RETURNING "id", "order_id", "refund_id", "seq")
        INSERT INTO "callback_deliveries" AS d ("id", "event_id", "order_id", "merchant_id", "status", "attempts_made", "next_attempt_at", "notify_url", "event_seq")
        SELECT p_delivery_ids[i], "event"."id", o."id", o."merchant_id", 'pending', 0, now(), (SELECT COALESCE(r."notify_url", o."notify_url", m."notify_url")
             FROM "orders" o JOIN "merchants" m ON m."id" = o."merchant_id" LEFT JOIN "refunds" r ON r."id" = "event"."refund_id"
            WHERE o."id" = "event"."order_id"), "event"."seq" FROM "event"
        RETURNING d."id", d."status" = 'pending' AND NOT EXISTS (SELECT 1 FROM "callback_deliveries" e WHERE e."order_id" = d."order_id" AND e."status" = 'pending' AND e."event_seq" < d."event_seq"),
                  d."merchant_id", d."notify_url"::text, o."late_payment";
    END LOOP;
    PERFORM "credit_order"(o."merchant_id", o."id", o."merchant_actual_fen", o."deposit_fen");
  END
$$`;

export class CallbackRecord1764640000000 implements MigrationInterface {
  name = 'CallbackRecord1764640000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS "claim_callback_attempt"(uuid, text, integer, integer, integer, text)`);
    await q.query(
      `DROP FUNCTION IF EXISTS "record_callback_attempt"(uuid, integer, text, integer, integer, text, text, text, timestamptz, text, text, integer, integer)`,
    );
    await q.query(RECORD_CALLBACK_ATTEMPT);
    await q.query(`ALTER TABLE "callback_deliveries" DROP CONSTRAINT "callback_deliveries_status_check"`);
    await q.query(
      `ALTER TABLE "callback_deliveries" ADD CONSTRAINT "callback_deliveries_status_check" CHECK ("status" IN ('pending', 'succeeded', 'failed', 'no_address'))`,
    );
    await q.query(CALLBACK_DESTINATION_OF);
    await q.query(CALLBACK_DELIVERY_WRITTEN);
    await q.query(SETTLE_ORDER);
    await q.query(`CREATE TRIGGER "callback_deliveries_written" BEFORE INSERT ON "callback_deliveries"
      FOR EACH ROW EXECUTE FUNCTION "callback_delivery_written"()`);
    // Pending deliveries not attempted yet get their key now, as new ones do when written.
    await q.query(
      `UPDATE "callback_deliveries" SET "destination" = "callback_destination_of"("notify_url") WHERE "status" = 'pending' AND "destination" = '' AND "notify_url" IS NOT NULL`,
    );
    await q.query(
      `UPDATE "callback_deliveries" SET "status" = 'no_address', "lease_until" = NULL, "updated_at" = now() WHERE "status" = 'pending' AND "notify_url" IS NULL`,
    );
    await q.query(`UPDATE "callback_deliveries" SET "lease_until" = NULL WHERE "lease_until" IS NOT NULL`);
    // callbackRecover's look-up of the events that never had an address, like ix_deliveries_merchant_failed for the failed ones.
    await q.query(`CREATE INDEX "ix_deliveries_merchant_no_address" ON "callback_deliveries" ("merchant_id", "updated_at") WHERE "status" = 'no_address'`);
  }

  async down(q: QueryRunner): Promise<void> {
    // The code before this needs claim_callback_attempt and the earlier record_callback_attempt: run migration 1764530000000's texts again by hand.
    await q.query(`DROP INDEX "ix_deliveries_merchant_no_address"`);
    await q.query(`DROP TRIGGER "callback_deliveries_written" ON "callback_deliveries"`);
    await q.query(`DROP FUNCTION "callback_delivery_written"()`);
    await q.query(`DROP FUNCTION "callback_destination_of"(text)`);
    await q.query(`UPDATE "callback_deliveries" SET "status" = 'pending' WHERE "status" = 'no_address'`);
    await q.query(`ALTER TABLE "callback_deliveries" DROP CONSTRAINT "callback_deliveries_status_check"`);
    await q.query(`ALTER TABLE "callback_deliveries" ADD CONSTRAINT "callback_deliveries_status_check" CHECK ("status" IN ('pending', 'succeeded', 'failed'))`);
    await q.query(
      `DROP FUNCTION "record_callback_attempt"(uuid, integer, text, integer, integer, text, text, text, timestamptz, text, text, integer, timestamptz)`,
    );
  }
}
