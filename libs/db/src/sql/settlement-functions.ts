/**
 * The SQL functions that settle a top-up: their current bodies, in one source file. A migration
 * holds a frozen copy of what it loaded, so a change here ships with a new migration holding the
 * new text; test/schema-replay fails until one does. The moves they may make, the payloads and what follows the commit are
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
 * COMMIT round trips, and one inside one (a stepwise settlement) joins it: the move with its
 * events and their deliveries (transition_order, the one writer of a transition), then the credit
 * (credit_order), last, so the balance row is locked only from there to the commit. No row moved
 * (a concurrent caller settled it, or the order is elsewhere): nothing written, no row returned.
 */
export const SETTLE_ORDER = `CREATE OR REPLACE FUNCTION "settle_order"(p_order bigint, p_from varchar[], p_order_types smallint[], p_to varchar, p_paid boolean,
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

/** In load order: settle_order calls credit_order (and transition_order, loaded before them). */
export const SETTLEMENT_FUNCTIONS = [CREDIT_ORDER, SETTLE_ORDER];
