import { deliveryAddressSql } from '../repositories/delivery-address';
import { orderHeadSql } from './callback-functions';

/**
 * The SQL functions that settle a top-up: their current bodies, in one source file. A migration
 * holds a frozen copy of what it loaded, so a change here (or to deliveryAddressSql, which
 * settle_order embeds) ships with a new migration holding the new text; test/schema-replay
 * fails until one does. The moves they may make, the payloads and what follows the commit are
 * decided in TypeScript (OrderLifecycle); these only write them.
 */

/**
 * credit_order(merchant, order, merchant_actual_fen, deposit_fen): a completed top-up's two
 * ledger entries (order_credit to available, order_deposit to deposit), then their amounts on
 * the merchant's balance, once per order: the entries' unique (subject, kind) index makes a second
 * call insert nothing and move nothing. True when this call credited. The balance upsert is the
 * last step, so the balance row stays locked only from there to the commit (the settlement's
 * lock order: order row, counters, outbox, balance).
 */
export const CREDIT_ORDER = `CREATE OR REPLACE FUNCTION "credit_order"(p_merchant integer, p_order bigint, p_actual_fen bigint, p_deposit_fen bigint)
  RETURNS boolean VOLATILE LANGUAGE plpgsql AS $$
  DECLARE v_credited boolean;
  BEGIN
    WITH "entries" AS (
      INSERT INTO "ledger_entries" ("merchant_id", "order_id", "refund_id", "kind", "amount_fen")
      VALUES (p_merchant, p_order, NULL, 'order_credit', p_actual_fen), (p_merchant, p_order, NULL, 'order_deposit', p_deposit_fen)
      ON CONFLICT DO NOTHING RETURNING "kind", "amount_fen"),
    "credited" AS (
      INSERT INTO "balances" ("merchant_id", "available_fen", "deposit_fen", "updated_at")
      SELECT p_merchant, coalesce(sum("amount_fen") FILTER (WHERE "kind" = 'order_credit'), 0), coalesce(sum("amount_fen") FILTER (WHERE "kind" = 'order_deposit'), 0), now()
        FROM "entries" HAVING count(*) > 0
      ON CONFLICT ("merchant_id") DO UPDATE SET
        "available_fen" = "balances"."available_fen" + EXCLUDED."available_fen",
        "deposit_fen" = "balances"."deposit_fen" + EXCLUDED."deposit_fen",
        "updated_at" = now()
      RETURNING 1)
    SELECT count(*) > 0 INTO v_credited FROM "credited";
    RETURN v_credited;
  END
$$`;

/**
 * settle_order(order, from states, order types, to, paid, channel_trade_no, events...): a
 * top-up's settlement as one statement, so a caller outside a transaction needs no BEGIN and
 * COMMIT round trips, and one inside one (a stepwise settlement) joins it:
 *  1. one conditional UPDATE of the order to `p_to` (completed), only from the (state, order
 *     type) pairs given (the move, from libs/orders' transition table); `p_paid` sets paid_at and
 *     flags a cancelled order's payment as late, as OrderRepository's transitions do. No row
 *     moved: nothing is written and no row returned, so of two concurrent callers one settles;
 *  2. each event (order.paid, then order.completed: one statement each, so their seq follows the
 *     list) with its delivery, addressed as SPEC 7 Address says; a payload's updatetime and
 *     paid_at are the moved row's (now(), the transaction's time), the rest is the caller's;
 *  3. the credit (credit_order), last.
 * One row per delivery, in the events' order: head when no earlier delivery of its order was
 * pending as it was written (its job may be added without a read back after the commit).
 */
export const SETTLE_ORDER = `CREATE OR REPLACE FUNCTION "settle_order"(p_order bigint, p_from varchar[], p_order_types smallint[], p_to varchar, p_paid boolean,
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
        SELECT p_delivery_ids[i], "event"."id", o."id", o."merchant_id", 'pending', 0, now(), ${deliveryAddressSql('"event"')}, "event"."seq" FROM "event"
        RETURNING d."id", ${orderHeadSql('d')},
                  d."merchant_id", d."notify_url"::text, o."late_payment";
    END LOOP;
    PERFORM "credit_order"(o."merchant_id", o."id", o."merchant_actual_fen", o."deposit_fen");
  END
$$`;

/** In load order: settle_order calls credit_order. */
export const SETTLEMENT_FUNCTIONS = [CREDIT_ORDER, SETTLE_ORDER];
