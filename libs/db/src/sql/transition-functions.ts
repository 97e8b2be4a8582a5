import { deliveryAddressSql } from '../repositories/delivery-address';
import { orderHeadSql } from './callback-functions';

/**
 * The one writer of each state move with its event and its outbox row: orders (top-ups and sell
 * orders alike), refunds, and every callback delivery. In SQL, not TypeScript, because the hot
 * path (a final Pay: pending -> completed, two events, the credit) must stay one statement with no
 * BEGIN/COMMIT round trips (settle_order), and a second TypeScript copy of the same writes is what
 * issue 39 removed. Which moves are allowed is decided in libs/orders (the transition tables) and
 * passed in as (from state, order type) pairs; these only write them. A change here ships with a
 * new migration holding the new text (test/schema-replay fails until one does).
 */

/**
 * add_callback_delivery(delivery, event, order, merchant, refund, event seq, origin): the outbox
 * row, the one place a delivery is written (an event's first, a resend, a recovery). Addressed as
 * SPEC 7 Address says (deliveryAddressSql); head when no earlier delivery of its order was pending
 * as it was written, so its job may be added without a read back after the commit.
 */
export const ADD_CALLBACK_DELIVERY = `CREATE OR REPLACE FUNCTION "add_callback_delivery"(p_delivery uuid, p_event uuid, p_order bigint, p_merchant integer,
    p_refund bigint, p_seq bigint, p_origin varchar)
  RETURNS TABLE (delivery_id uuid, head boolean, notify_url text)
  VOLATILE LANGUAGE plpgsql AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
      INSERT INTO "callback_deliveries" AS d ("id", "event_id", "order_id", "merchant_id", "status", "attempts_made", "next_attempt_at", "origin", "notify_url", "event_seq")
      SELECT p_delivery, p_event, p_order, p_merchant, 'pending', 0, now(), p_origin, ${deliveryAddressSql('a')}, p_seq
        FROM (SELECT p_order AS "order_id", p_refund AS "refund_id") a
      RETURNING d."id", ${orderHeadSql('d')}, d."notify_url"::text;
  END
$$`;

/**
 * record_order_event(event, order, merchant, type, payload, refund, delivery): an order's event
 * with its first delivery (add_callback_delivery), in the caller's transaction.
 */
export const RECORD_ORDER_EVENT = `CREATE OR REPLACE FUNCTION "record_order_event"(p_event uuid, p_order bigint, p_merchant integer, p_type varchar,
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

/**
 * transition_order(order, from states, order types, to, paid, channel_trade_no, events...): the
 * one way an order changes state. One conditional UPDATE, only from the (state, order type) pairs
 * given (a move of ORDER_TRANSITIONS), so of two concurrent callers one moves the order and the
 * other gets no row and writes nothing; `p_paid` sets paid_at and flags a cancelled order's
 * payment as late; an empty channel_trade_no keeps the row's. Then each event (one statement each,
 * so their seq follows the list) with its delivery; a payload's updatetime and paid_at are the
 * moved row's (Unix seconds, as unixSeconds() in TypeScript), the rest is the caller's. One row per
 * delivery, in the events' order, each carrying the moved order (one with no delivery when no event).
 */
export const TRANSITION_ORDER = `CREATE OR REPLACE FUNCTION "transition_order"(p_order bigint, p_from varchar[], p_order_types smallint[], p_to varchar, p_paid boolean,
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

/**
 * transition_refund(refund, from states, to, channel_refund_no, failure, event...): the one way a
 * refund changes state, as transition_order: one conditional UPDATE (its lease ends with it), then
 * its refund.* event on the order with the delivery; the payload's updatetime is the moved row's.
 */
export const TRANSITION_REFUND = `CREATE OR REPLACE FUNCTION "transition_refund"(p_refund bigint, p_from varchar[], p_to varchar, p_channel_refund_no varchar, p_failure text,
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

/** In load order: each calls only those before it. */
export const TRANSITION_FUNCTIONS = [ADD_CALLBACK_DELIVERY, RECORD_ORDER_EVENT, TRANSITION_ORDER, TRANSITION_REFUND];
