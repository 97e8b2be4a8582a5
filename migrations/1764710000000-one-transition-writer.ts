import type { MigrationInterface, QueryRunner } from 'typeorm';

/** add_callback_delivery as this migration first loaded it (libs/db/src/sql/transition-functions.ts), frozen. */
const ADD_CALLBACK_DELIVERY = `CREATE OR REPLACE FUNCTION "add_callback_delivery"(p_delivery uuid, p_event uuid, p_order bigint, p_merchant integer,
    p_refund bigint, p_seq bigint, p_origin varchar)
  RETURNS TABLE (delivery_id uuid, head boolean, notify_url text)
  VOLATILE LANGUAGE plpgsql AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
      INSERT INTO "callback_deliveries" AS d ("id", "event_id", "order_id", "merchant_id", "status", "attempts_made", "next_attempt_at", "origin", "notify_url", "event_seq")
      SELECT p_delivery, p_event, p_order, p_merchant, 'pending', 0, now(), p_origin, (SELECT COALESCE(r."notify_url", o."notify_url", m."notify_url")
             FROM "orders" o JOIN "merchants" m ON m."id" = o."merchant_id" LEFT JOIN "refunds" r ON r."id" = a."refund_id"
            WHERE o."id" = a."order_id"), p_seq
        FROM (SELECT p_order AS "order_id", p_refund AS "refund_id") a
      RETURNING d."id", d."status" = 'pending' AND NOT EXISTS (SELECT 1 FROM "callback_deliveries" e WHERE e."order_id" = d."order_id" AND e."status" = 'pending' AND e."event_seq" < d."event_seq"), d."notify_url"::text;
  END
$$`;

/** record_order_event as first loaded, frozen. */
const RECORD_ORDER_EVENT = `CREATE OR REPLACE FUNCTION "record_order_event"(p_event uuid, p_order bigint, p_merchant integer, p_type varchar,
    p_payload jsonb, p_refund bigint, p_delivery uuid)
  RETURNS TABLE (delivery_id uuid, head boolean, notify_url text)
  VOLATILE LANGUAGE plpgsql AS $$
  #variable_conflict use_column
  DECLARE v_seq bigint;
  BEGIN
    INSERT INTO "order_events" ("id", "order_id", "merchant_id", "type", "payload", "refund_id")
    VALUES (p_event, p_order, p_merchant, p_type, p_payload, p_refund) RETURNING "seq" INTO v_seq;
    RETURN QUERY SELECT * FROM "add_callback_delivery"(p_delivery, p_event, p_order, p_merchant, p_refund, v_seq, 'event');
  END
$$`;

/** transition_order as first loaded, frozen. */
const TRANSITION_ORDER = `CREATE OR REPLACE FUNCTION "transition_order"(p_order bigint, p_from varchar[], p_order_types smallint[], p_to varchar, p_paid boolean,
    p_channel_trade_no varchar, p_event_ids uuid[], p_event_types varchar[], p_payloads jsonb[], p_delivery_ids uuid[])
  RETURNS TABLE (delivery_id uuid, head boolean, notify_url text, moved "orders")
  VOLATILE LANGUAGE plpgsql AS $$
  #variable_conflict use_column
  DECLARE o "orders"; v_times jsonb;
  BEGIN
    UPDATE "orders" x SET "status" = p_to, "updated_at" = GREATEST(now(), x."created_at"),
           "paid_at" = CASE WHEN p_paid THEN now() ELSE x."paid_at" END,
           "late_payment" = x."late_payment" OR (p_paid AND x."status" = 'cancelled'),
           "channel_trade_no" = COALESCE(NULLIF(p_channel_trade_no, ''), x."channel_trade_no")
     WHERE x."id" = p_order AND (x."status", x."order_type") IN (SELECT * FROM unnest(p_from, p_order_types))
    RETURNING x.* INTO o;
    IF NOT FOUND THEN RETURN; END IF;
    v_times := jsonb_build_object('updatetime', floor(extract(epoch FROM o."updated_at"))::bigint,
                                  'paid_at', floor(extract(epoch FROM o."paid_at"))::bigint);
    FOR i IN 1 .. cardinality(p_event_ids) LOOP
      RETURN QUERY SELECT e.delivery_id, e.head, e.notify_url, o
        FROM "record_order_event"(p_event_ids[i], o."id", o."merchant_id", p_event_types[i], p_payloads[i] || v_times, NULL, p_delivery_ids[i]) e;
    END LOOP;
    -- A move with no event of its own (paid -> confirmed alone): the moved row, no delivery.
    IF cardinality(p_event_ids) = 0 THEN RETURN QUERY SELECT NULL::uuid, NULL::boolean, NULL::text, o; END IF;
  END
$$`;

/** transition_refund as first loaded, frozen. */
const TRANSITION_REFUND = `CREATE OR REPLACE FUNCTION "transition_refund"(p_refund bigint, p_from varchar[], p_to varchar, p_channel_refund_no varchar, p_failure text,
    p_event uuid, p_type varchar, p_payload jsonb, p_delivery uuid)
  RETURNS TABLE (delivery_id uuid, head boolean, notify_url text, moved "refunds")
  VOLATILE LANGUAGE plpgsql AS $$
  #variable_conflict use_column
  DECLARE r "refunds";
  BEGIN
    UPDATE "refunds" x SET "status" = p_to, "updated_at" = GREATEST(now(), x."created_at"), "lease_until" = NULL,
           "channel_refund_no" = COALESCE(p_channel_refund_no, x."channel_refund_no"), "failure" = COALESCE(left(p_failure, 256), x."failure")
     WHERE x."id" = p_refund AND x."status" = ANY(p_from)
    RETURNING x.* INTO r;
    IF NOT FOUND THEN RETURN; END IF;
    RETURN QUERY SELECT e.delivery_id, e.head, e.notify_url, r
      FROM "record_order_event"(p_event, r."order_id", r."merchant_id", p_type,
                                p_payload || jsonb_build_object('updatetime', floor(extract(epoch FROM r."updated_at"))::bigint), r."id", p_delivery) e;
  END
$$`;

/** settle_order as this migration loaded it: transition_order, then credit_order (libs/db/src/sql/settlement-functions.ts), frozen. */
const SETTLE_ORDER = `CREATE OR REPLACE FUNCTION "settle_order"(p_order bigint, p_from varchar[], p_order_types smallint[], p_to varchar, p_paid boolean,
    p_channel_trade_no varchar, p_event_ids uuid[], p_event_types varchar[], p_payloads jsonb[], p_delivery_ids uuid[])
  RETURNS TABLE (delivery_id uuid, head boolean, merchant_id integer, notify_url text, late_payment boolean)
  VOLATILE LANGUAGE plpgsql AS $$
  #variable_conflict use_column
  DECLARE t record; o "orders";
  BEGIN
    FOR t IN SELECT * FROM "transition_order"(p_order, p_from, p_order_types, p_to, p_paid, p_channel_trade_no, p_event_ids, p_event_types, p_payloads, p_delivery_ids) LOOP
      o := t.moved;
      delivery_id := t.delivery_id; head := t.head; merchant_id := o."merchant_id"; notify_url := t.notify_url; late_payment := o."late_payment";
      RETURN NEXT;
    END LOOP;
    IF o."id" IS NULL THEN RETURN; END IF;
    PERFORM "credit_order"(o."merchant_id", o."id", o."merchant_actual_fen", o."deposit_fen");
  END
$$`;

/** settle_order as it was before (its own UPDATE and outbox rows), for down. */
const SETTLE_ORDER_BEFORE = `CREATE OR REPLACE FUNCTION "settle_order"(p_order bigint, p_from varchar[], p_order_types smallint[], p_to varchar, p_paid boolean,
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

/**
 * One writer per money rule (issue 39): an order's or a refund's move with its event and outbox
 * row is written by transition_order / transition_refund, every callback delivery by
 * add_callback_delivery, and settle_order becomes transition_order then credit_order.
 */
export class OneTransitionWriter1764710000000 implements MigrationInterface {
  name = 'OneTransitionWriter1764710000000';

  async up(q: QueryRunner): Promise<void> {
    for (const sql of [ADD_CALLBACK_DELIVERY, RECORD_ORDER_EVENT, TRANSITION_ORDER, TRANSITION_REFUND, SETTLE_ORDER]) await q.query(sql);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(SETTLE_ORDER_BEFORE);
    await q.query(`DROP FUNCTION "transition_refund"(bigint, varchar[], varchar, varchar, text, uuid, varchar, jsonb, uuid)`);
    await q.query(`DROP FUNCTION "transition_order"(bigint, varchar[], smallint[], varchar, boolean, varchar, uuid[], varchar[], jsonb[], uuid[])`);
    await q.query(`DROP FUNCTION "record_order_event"(uuid, bigint, integer, varchar, jsonb, bigint, uuid)`);
    await q.query(`DROP FUNCTION "add_callback_delivery"(uuid, uuid, bigint, integer, bigint, bigint, varchar)`);
  }
}
