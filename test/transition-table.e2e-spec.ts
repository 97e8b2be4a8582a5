import { BUY_ORDER, SELL_ORDER } from '@app/common';
import { type Move, type OrderStatus, RefundRepository, type RefundStatus, SettlementRepository, TransitionRepository } from '@app/db';
import { ORDER_TRANSITIONS, REFUND_TRANSITIONS, type TransitionTable } from '@app/orders';
import { type TestApi, merchantWithChannels, newNonce, startTestApi } from './helpers/api';
import { createOrder, sql } from './helpers/orders';

const ORDER_STATES: OrderStatus[] = ['pending', 'paid', 'confirmed', 'completed', 'cancelled'];
const REFUND_STATES: RefundStatus[] = ['processing', 'succeeded', 'failed'];
const ORDER_TYPES = [BUY_ORDER, SELL_ORDER];

/** Every cause a table names, each once. */
function causesOf<S extends string, C extends string>(table: TransitionTable<S, C>): C[] {
  return [...new Set(table.rules.map((r) => r.by))];
}

/** What a move may have written about an order: its status, and its rows in the ledger, the history and the outbox. */
async function footprint(api: TestApi, orderId: string): Promise<Record<string, unknown>> {
  const [row] = await sql(api.app).query(
    `SELECT o."status", o."updated_at", o."paid_at", o."late_payment",
            (SELECT count(*)::int FROM "ledger_entries" l WHERE l."order_id" = o."id") AS "entries",
            (SELECT count(*)::int FROM "order_events" e WHERE e."order_id" = o."id") AS "events",
            (SELECT count(*)::int FROM "callback_deliveries" d WHERE d."order_id" = o."id") AS "deliveries",
            (SELECT row_to_json(b) FROM "balances" b WHERE b."merchant_id" = o."merchant_id") AS "balance",
            (SELECT json_agg(r."status" ORDER BY r."id") FROM "refunds" r WHERE r."order_id" = o."id") AS "refunds"
       FROM "orders" o WHERE o."id" = $1`,
    [orderId],
  );
  return row;
}

/**
 * The transition tables of libs/orders against PostgreSQL through the one writer of a move
 * (transition_order, settle_order, transition_refund): for every state, order type and cause, the
 * move the cause makes (as the lifecycles build it from the table) moves the row exactly when the
 * table has that row, writing one event and its outbox row; every other pair changes nothing.
 */
describe('the transition tables and the database agree (real PostgreSQL)', () => {
  let api: TestApi;
  let merchantId: number;
  let template: string;
  let columns: string[];

  beforeAll(async () => {
    api = await startTestApi();
    const { merchant, channels } = await merchantWithChannels(api.operator, { notifyUrl: 'https://merchant.example/transition-table' });
    merchantId = merchant.id;
    const res = await createOrder(api.app, merchant, { cny_amount: '10.00', paychannel_id: channels.processor });
    template = String((await sql(api.app).query(`SELECT "id" FROM "orders" WHERE "order_no" = $1`, [res.body.data.order_no]))[0].id);
    const cols: { column_name: string }[] = await sql(api.app).query(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'orders' AND column_name NOT IN ('id', 'order_no', 'merchant_order_no', 'status', 'order_type')`,
    );
    columns = cols.map((c) => `"${c.column_name}"`);
  }, 120_000);
  afterAll(() => api?.close());

  /** A copy of the template order in `status`, of `orderType`. */
  async function orderIn(status: OrderStatus, orderType: number): Promise<string> {
    const no = `TT${newNonce().slice(0, 20)}`;
    const [row] = await sql(api.app).query(
      `INSERT INTO "orders" ("order_no", "merchant_order_no", "status", "order_type", ${columns.join(', ')})
       SELECT $2, $2, $3, $4::smallint, ${columns.map(sellOrderAmounts).join(', ')} FROM "orders" WHERE "id" = $1 RETURNING "id"`,
      [template, no, status, orderType],
    );
    return String(row.id);
  }

  /** A sell order's amounts as orders_amounts_check wants them: debited cny + service, no deposit. */
  function sellOrderAmounts(column: string): string {
    if (column === '"deposit_fen"') return `CASE WHEN $4::smallint = ${SELL_ORDER} THEN 0 ELSE "deposit_fen" END`;
    if (column === '"merchant_actual_fen"') return `CASE WHEN $4::smallint = ${SELL_ORDER} THEN "cny_fen" + "service_fen" ELSE "merchant_actual_fen" END`;
    return column;
  }

  const event = { type: 'order.cancelled' as const, payload: (eventId: string) => ({ event_id: eventId, probe: true }) };

  for (const cause of causesOf(ORDER_TRANSITIONS)) {
    it(`order cause ${cause}: moves exactly the table's (state, order type) pairs, nothing else`, async () => {
      const move = ORDER_TRANSITIONS.move(cause);
      const writer = api.app.get(TransitionRepository);
      const outcomes: string[] = [];
      for (const from of ORDER_STATES)
        for (const orderType of ORDER_TYPES) {
          const id = await orderIn(from, orderType);
          const before = await footprint(api, id);
          const moved = await writer.moveOrder(sql(api.app).manager, id, move, {}, [event]);
          const after = await footprint(api, id);
          const allowed = ORDER_TRANSITIONS.rules.some((r) => r.by === cause && r.from === from && r.to === move.to && r.orderTypes.includes(orderType));
          if (allowed) {
            expect([from, orderType, moved?.row.status, after.status, after.events, after.deliveries, after.entries]).toEqual([
              from,
              orderType,
              move.to,
              move.to,
              1,
              1,
              before.entries,
            ]);
          } else {
            expect([from, orderType, moved, after]).toEqual([from, orderType, null, before]);
          }
          outcomes.push(`${from}/${orderType}:${allowed ? 'moved' : 'kept'}`);
        }
      expect(outcomes.filter((o) => o.endsWith('moved')).length).toBe(move.pairs.length);
    });
  }

  it('every (from, to) pair the table lacks cannot even be asked for; every pair it has succeeds through the writer', async () => {
    const writer = api.app.get(TransitionRepository);
    for (const from of ORDER_STATES)
      for (const to of ORDER_STATES) {
        const types = ORDER_TRANSITIONS.orderTypes(from, to);
        if (types.length === 0) {
          expect(() => ORDER_TRANSITIONS.between(from, to)).toThrow(/is not a transition of the state table/);
          continue;
        }
        for (const orderType of types) {
          const id = await orderIn(from, orderType);
          const moved = await writer.moveOrder(sql(api.app).manager, id, ORDER_TRANSITIONS.between(from, to), {}, [event]);
          expect([from, to, orderType, moved?.row.status]).toEqual([from, to, orderType, to]);
        }
      }
  });

  it('the settlement (settle_order: the move, its events, then the credit) moves and credits only from the states the table allows', async () => {
    const settlement = api.app.get(SettlementRepository);
    const credit: Move<OrderStatus> = ORDER_TRANSITIONS.move('credit');
    for (const from of ORDER_STATES)
      for (const orderType of ORDER_TYPES) {
        const id = await orderIn(from, orderType);
        const before = await footprint(api, id);
        const settled = await settlement.settle(sql(api.app).manager, id, credit, {}, [{ ...event, type: 'order.completed' }]);
        const after = await footprint(api, id);
        if (ORDER_TRANSITIONS.allows(from, credit.to, orderType) && credit.from.includes(from)) {
          expect([from, orderType, settled?.events.length, after.status, after.entries, after.events]).toEqual([from, orderType, 1, 'completed', 2, 1]);
          expect(after.balance).not.toEqual(before.balance);
        } else {
          expect([from, orderType, settled, after]).toEqual([from, orderType, null, before]);
        }
      }
  });

  it('refunds: each cause moves a refund only from the states the table allows, with its event; any other state changes nothing', async () => {
    const writer = api.app.get(TransitionRepository);
    const refunds = api.app.get(RefundRepository);
    for (const cause of causesOf(REFUND_TRANSITIONS)) {
      const move = REFUND_TRANSITIONS.step(cause);
      for (const from of REFUND_STATES) {
        const orderId = await orderIn('completed', BUY_ORDER);
        const refund = await refunds.insert(sql(api.app).manager, {
          refundNo: `RT${newNonce().slice(0, 20)}`,
          merchantId,
          orderId,
          orderNo: `order-${orderId}`,
          merchantRefundNo: `mr-${newNonce().slice(0, 12)}`,
          refundFen: 100,
          reason: null,
          notifyUrl: null,
          requestHash: 'x',
          createdAt: new Date(),
        });
        await sql(api.app).query(`UPDATE "refunds" SET "status" = $2 WHERE "id" = $1`, [refund.id, from]);
        const before = await footprint(api, orderId);
        const type = cause === 'channel_success' ? 'refund.succeeded' : 'refund.failed';
        const moved = await writer.moveRefund(sql(api.app).manager, refund.id, move, {}, { type, payload: (eventId) => ({ event_id: eventId }) });
        const after = await footprint(api, orderId);
        if (REFUND_TRANSITIONS.allows(from, move.to, BUY_ORDER)) {
          expect([cause, from, moved?.row.status, after.refunds, after.events, after.deliveries]).toEqual([cause, from, move.to, [move.to], 1, 1]);
        } else {
          expect([cause, from, moved, after]).toEqual([cause, from, null, before]);
        }
      }
    }
  });
});
