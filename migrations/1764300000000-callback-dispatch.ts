import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The delivery rows become the queue (SPEC 7 Order, Fairness, Durability): each pending row
 * carries its destination (scheme://host:port), the sequence of its event within the order
 * and a lease; callback_destinations keeps each destination's circuit. One function claims a
 * batch of due deliveries under every rule at once, serialised by an advisory lock so the
 * per-destination counts are exact across workers.
 */
export class CallbackDispatch1764300000000 implements MigrationInterface {
  name = 'CallbackDispatch1764300000000';

  async up(q: QueryRunner): Promise<void> {
    // scheme://host:port, lower-case, default port filled in; '' when there is no usable address.
    await q.query(`CREATE FUNCTION "callback_destination"(url text) RETURNS text IMMUTABLE LANGUAGE plpgsql AS $$
      DECLARE m text[]; scheme text; port text;
      BEGIN
        IF url IS NULL THEN RETURN ''; END IF;
        m := regexp_match(btrim(url), '^([A-Za-z][A-Za-z0-9+.-]*)://(?:[^@/?#]*@)?(\\[[^\\]/?#]*\\]|[^:/?#]*)(?::([0-9]*))?(?:[/?#]|$)');
        IF m IS NULL OR m[2] = '' THEN RETURN ''; END IF;
        scheme := lower(m[1]);
        port := NULLIF(ltrim(COALESCE(m[3], ''), '0'), '');
        IF port IS NULL AND COALESCE(m[3], '') = '' THEN
          port := CASE scheme WHEN 'https' THEN '443' WHEN 'http' THEN '80' ELSE '' END;
        END IF;
        RETURN scheme || '://' || rtrim(lower(m[2]), '.') || ':' || COALESCE(port, '0');
      END $$`);

    // The order of an order's events: created_at is the transaction's start, shared by two events of one transaction.
    await q.query(`CREATE SEQUENCE "order_events_seq_seq"`);
    await q.query(`ALTER TABLE "order_events" ADD COLUMN "seq" bigint`);
    await q.query(
      `UPDATE "order_events" SET "seq" = s.n FROM (SELECT "id", nextval('order_events_seq_seq') AS n FROM "order_events" ORDER BY "created_at", "id") s WHERE s."id" = "order_events"."id"`,
    );
    await q.query(`ALTER TABLE "order_events" ALTER COLUMN "seq" SET DEFAULT nextval('order_events_seq_seq'), ALTER COLUMN "seq" SET NOT NULL`);
    await q.query(`ALTER SEQUENCE "order_events_seq_seq" OWNED BY "order_events"."seq"`);

    await q.query(`ALTER TABLE "callback_deliveries"
      ADD COLUMN "destination" varchar(600) NOT NULL DEFAULT '',
      ADD COLUMN "event_seq" bigint NOT NULL DEFAULT 0,
      ADD COLUMN "lease_until" timestamptz`);
    await q.query(`UPDATE "callback_deliveries" d
        SET "event_seq" = e."seq", "destination" = "callback_destination"(COALESCE(r."notify_url", o."notify_url", m."notify_url"))
       FROM "order_events" e JOIN "orders" o ON o."id" = e."order_id" JOIN "merchants" m ON m."id" = e."merchant_id" LEFT JOIN "refunds" r ON r."id" = e."refund_id"
      WHERE e."id" = d."event_id" AND d."status" = 'pending'`);

    // Every way a delivery is written (transitions, resend, recover, fixtures) gets both, from the same address SPEC 7 sends to.
    await q.query(`CREATE FUNCTION "callback_delivery_fill"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        SELECT e."seq", "callback_destination"(COALESCE(r."notify_url", o."notify_url", m."notify_url"))
          INTO NEW."event_seq", NEW."destination"
          FROM "order_events" e JOIN "orders" o ON o."id" = e."order_id" JOIN "merchants" m ON m."id" = e."merchant_id"
          LEFT JOIN "refunds" r ON r."id" = e."refund_id"
         WHERE e."id" = NEW."event_id";
        NEW."destination" := COALESCE(NEW."destination", '');
        NEW."event_seq" := COALESCE(NEW."event_seq", 0);
        RETURN NEW;
      END $$`);
    await q.query(`CREATE TRIGGER "callback_deliveries_fill" BEFORE INSERT ON "callback_deliveries" FOR EACH ROW EXECUTE FUNCTION "callback_delivery_fill"()`);

    // The due scan per destination, the live leases per destination, the earlier pending events of an order.
    await q.query(`CREATE INDEX "ix_deliveries_pending_destination" ON "callback_deliveries" ("destination", "next_attempt_at") WHERE "status" = 'pending'`);
    await q.query(`CREATE INDEX "ix_deliveries_leased" ON "callback_deliveries" ("destination", "lease_until") WHERE "lease_until" IS NOT NULL`);
    await q.query(`CREATE INDEX "ix_deliveries_pending_order" ON "callback_deliveries" ("order_id", "event_seq") WHERE "status" = 'pending'`);

    await q.query(`CREATE TABLE "callback_destinations" (
      "destination" varchar(600) PRIMARY KEY,
      "consecutive_failures" integer NOT NULL DEFAULT 0,
      "circuit_open_since" timestamptz,
      "next_probe_at" timestamptz,
      "last_success_at" timestamptz,
      "last_failure_at" timestamptz,
      "updated_at" timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE INDEX "ix_destinations_open" ON "callback_destinations" ("destination") WHERE "circuit_open_since" IS NOT NULL`);

    await q.query(CLAIM_FUNCTION);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION "claim_callback_deliveries"(integer, integer, integer, integer, integer, text)`);
    await q.query(`DROP TABLE "callback_destinations"`);
    await q.query(`DROP TRIGGER "callback_deliveries_fill" ON "callback_deliveries"`);
    await q.query(`DROP FUNCTION "callback_delivery_fill"()`);
    await q.query(`DROP INDEX "ix_deliveries_pending_destination"`);
    await q.query(`DROP INDEX "ix_deliveries_leased"`);
    await q.query(`DROP INDEX "ix_deliveries_pending_order"`);
    await q.query(`ALTER TABLE "callback_deliveries" DROP COLUMN "destination", DROP COLUMN "event_seq", DROP COLUMN "lease_until"`);
    await q.query(`ALTER TABLE "order_events" DROP COLUMN "seq"`);
    await q.query(`DROP FUNCTION "callback_destination"(text)`);
  }
}

/**
 * claim_callback_deliveries(limit, lease_ms, per_destination, probe_ms, max_attempts, interrupted):
 * a batch of due pending deliveries, oldest first, each leased and its attempt counted and
 * logged as interrupted until its outcome is recorded.
 *  - Order: a row waits while an earlier event of its order has a pending delivery (the
 *    earliest is always claimable; another order is never held).
 *  - Fairness: at most per_destination live leases per destination.
 *  - Circuit: an open circuit gives one probe when next_probe_at has come and none is in
 *    flight, and moves next_probe_at on; nothing else, so held deliveries spend no attempts.
 *  - A row that has used every attempt (a worker died on its last one) ends failed, unsent.
 * The advisory lock makes the counts exact: the query after it runs with a fresh snapshot
 * taken once the previous claimer committed. PL/pgSQL keeps the query's plan for the session.
 */
const CLAIM_FUNCTION = `CREATE FUNCTION "claim_callback_deliveries"(p_limit integer, p_lease_ms integer, p_per_destination integer, p_probe_ms integer, p_max_attempts integer, p_interrupted text)
  RETURNS TABLE (delivery_id uuid, attempt integer, exhausted boolean, destination text, probe boolean, event_id uuid, event_type text, payload jsonb,
                 notify_url text, api_key text, api_secret_enc text, api_secret_previous_enc text)
  VOLATILE LANGUAGE plpgsql AS $$
  #variable_conflict use_column
  BEGIN
  PERFORM pg_advisory_xact_lock(7007001);

  RETURN QUERY WITH RECURSIVE dests(destination) AS (
    (SELECT d."destination" FROM "callback_deliveries" d WHERE d."status" = 'pending' ORDER BY d."destination" LIMIT 1)
    UNION ALL
    SELECT (SELECT d."destination" FROM "callback_deliveries" d WHERE d."status" = 'pending' AND d."destination" > x.destination ORDER BY d."destination" LIMIT 1)
      FROM dests x WHERE x.destination IS NOT NULL
  ),
  slots AS (
    SELECT x.destination, c."circuit_open_since" IS NOT NULL AS open,
           CASE WHEN x.destination = '' THEN p_limit
                WHEN c."circuit_open_since" IS NULL THEN p_per_destination - live.n
                WHEN c."next_probe_at" <= now() AND live.n = 0 THEN 1
                ELSE 0 END AS free
      FROM dests x
      LEFT JOIN "callback_destinations" c ON c."destination" = x.destination
      CROSS JOIN LATERAL (SELECT count(*)::int AS n FROM "callback_deliveries" l
                           WHERE l."destination" = x.destination AND l."lease_until" > now() AND l."status" = 'pending') live
     WHERE x.destination IS NOT NULL
  ),
  picked AS (
    SELECT p."id", p."next_attempt_at", s.destination, s.open
      FROM slots s CROSS JOIN LATERAL (
        SELECT d."id", d."next_attempt_at" FROM "callback_deliveries" d
         WHERE d."destination" = s.destination AND d."status" = 'pending' AND d."next_attempt_at" <= now()
           AND (d."lease_until" IS NULL OR d."lease_until" <= now())
           AND NOT EXISTS (SELECT 1 FROM "callback_deliveries" e
                            WHERE e."order_id" = d."order_id" AND e."status" = 'pending' AND e."event_seq" < d."event_seq")
         ORDER BY d."next_attempt_at" LIMIT s.free) p
     WHERE s.free > 0
     ORDER BY p."next_attempt_at" LIMIT p_limit
  ),
  claimed AS (
    UPDATE "callback_deliveries" d
       SET "attempts_made" = d."attempts_made" + CASE WHEN d."attempts_made" < p_max_attempts THEN 1 ELSE 0 END,
           "status" = CASE WHEN d."attempts_made" < p_max_attempts THEN 'pending' ELSE 'failed' END,
           "last_error" = CASE WHEN d."attempts_made" < p_max_attempts THEN d."last_error" ELSE COALESCE(d."last_error", 'no attempts left') END,
           "lease_until" = CASE WHEN d."attempts_made" < p_max_attempts THEN now() + p_lease_ms * interval '1 millisecond' END,
           "updated_at" = now()
      FROM picked
     -- Rechecked on the row's latest version: a row settled or leased since the scan's snapshot is left alone.
     WHERE d."id" = picked."id" AND d."status" = 'pending' AND (d."lease_until" IS NULL OR d."lease_until" <= now())
    RETURNING d."id", d."attempts_made", d."status", d."event_id", d."order_id", d."merchant_id", d."destination", picked.open
  ),
  logged AS (
    INSERT INTO "callback_attempts" ("delivery_id", "number", "attempted_at", "duration_ms", "error")
    SELECT c."id", c."attempts_made", now(), 0, p_interrupted FROM claimed c WHERE c."status" = 'pending'
  ),
  probes AS (
    UPDATE "callback_destinations" c SET "next_probe_at" = now() + p_probe_ms * interval '1 millisecond', "updated_at" = now()
     WHERE c."circuit_open_since" IS NOT NULL AND c."destination" IN (SELECT cl."destination" FROM claimed cl WHERE cl.open)
  )
  SELECT c."id", c."attempts_made", c."status" = 'failed', c."destination"::text, c.open, e."id", e."type"::text, e."payload",
         COALESCE(r."notify_url", o."notify_url", m."notify_url")::text, m."api_key"::text, m."api_secret_enc"::text,
         -- During a rotation's grace the previous secret signs too (SPEC 3: both v1, entries).
         CASE WHEN m."api_secret_previous_until" > now() THEN m."api_secret_previous_enc" END::text
    FROM claimed c
    JOIN "order_events" e ON e."id" = c."event_id"
    JOIN "orders" o ON o."id" = c."order_id"
    JOIN "merchants" m ON m."id" = c."merchant_id"
    LEFT JOIN "refunds" r ON r."id" = e."refund_id";
  END
$$`;
