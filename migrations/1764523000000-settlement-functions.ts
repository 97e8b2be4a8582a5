import type { MigrationInterface, QueryRunner } from 'typeorm';

/** credit_order as this migration first loaded it (libs/db/src/sql/settlement-functions.ts at 7872046), frozen. */
const CREDIT_ORDER = `CREATE OR REPLACE FUNCTION "credit_order"(p_merchant integer, p_order bigint, p_actual_fen bigint, p_deposit_fen bigint)
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

/** settle_order as this migration first loaded it (7872046, deliveryAddressSql inlined), frozen. */
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
        RETURNING d."id", NOT EXISTS (SELECT 1 FROM "callback_deliveries" e WHERE e."order_id" = d."order_id" AND e."status" = 'pending' AND e."event_seq" < d."event_seq"),
                  d."merchant_id", d."notify_url"::text, o."late_payment";
    END LOOP;
    PERFORM "credit_order"(o."merchant_id", o."id", o."merchant_actual_fen", o."deposit_fen");
  END
$$`;

/**
 * A top-up's settlement (the move to completed, its events and deliveries, the credit) as one
 * statement, settle_order, and the credit it ends with, credit_order (issue 20): a final payment
 * settles without BEGIN and COMMIT round trips. Their current bodies live in
 * libs/db/src/sql/settlement-functions.ts.
 */
export class SettlementFunctions1764523000000 implements MigrationInterface {
  name = 'SettlementFunctions1764523000000';

  async up(q: QueryRunner): Promise<void> {
    // settle_order calls credit_order: loaded first.
    await q.query(CREDIT_ORDER);
    await q.query(SETTLE_ORDER);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION "settle_order"(bigint, varchar[], smallint[], varchar, boolean, varchar, uuid[], varchar[], jsonb[], uuid[])`);
    await q.query(`DROP FUNCTION "credit_order"(integer, bigint, bigint, bigint)`);
  }
}
