import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { EntityManager, EntityTarget } from 'typeorm';
import { type CallbackEventType, Order, type OrderStatus, Refund, type RefundStatus } from '../entities';
import type { Move } from '../state-move';
import type { RecordedEvent } from './order-event.repository';

/** What an order's transition may set besides status and updated_at. */
export interface TransitionChanges {
  /** Sets paid_at to now() and, when the order was cancelled, late_payment to true. */
  paid?: boolean;
  channelTradeNo?: string | null;
}

/** What a refund's transition may set besides status and updated_at. */
export interface RefundChanges {
  channelRefundNo?: string | null;
  failure?: string | null;
}

/** An event a transition records, in order; its payload's updatetime (and an order's paid_at) are set from the moved row. */
export interface TransitionEvent {
  type: CallbackEventType;
  payload: (eventId: string) => Record<string, unknown>;
}

/** What a transition wrote: the moved row and its events in the order given, each with its delivery. */
export interface Moved<T> {
  row: T;
  events: RecordedEvent[];
}

/** A delivery the function wrote, beside the moved row's columns (hence the prefix: orders have a notify_url too). */
interface WrittenRow {
  t_delivery_id: string;
  t_head: boolean;
  t_notify_url: string | null;
}

const TRANSITION_ORDER = `SELECT t."delivery_id" AS "t_delivery_id", t."head" AS "t_head", t."notify_url" AS "t_notify_url", (t."moved").*
  FROM "transition_order"($1, $2::varchar[], $3::smallint[], $4, $5, $6, $7::uuid[], $8::varchar[], $9::jsonb[], $10::uuid[]) t`;

/** The same writer for a batch of orders (the expiry pass), one event each, in one round trip. */
const TRANSITION_ORDERS = `SELECT t."delivery_id" AS "t_delivery_id", t."head" AS "t_head", t."notify_url" AS "t_notify_url", (t."moved").*
  FROM unnest($1::bigint[], $2::uuid[], $3::jsonb[], $4::uuid[]) AS a("id", "event_id", "payload", "delivery_id")
  CROSS JOIN LATERAL "transition_order"(a."id", $5::varchar[], $6::smallint[], $7, false, NULL, ARRAY[a."event_id"], ARRAY[$8::varchar], ARRAY[a."payload"], ARRAY[a."delivery_id"]) t`;

const TRANSITION_REFUND = `SELECT t."delivery_id" AS "t_delivery_id", t."head" AS "t_head", t."notify_url" AS "t_notify_url", (t."moved").*
  FROM "transition_refund"($1, $2::varchar[], $3, $4, $5, $6, $7, $8::jsonb, $9) t`;

/**
 * An order move's ids and the parameters of transition_order, which settle_order shares (it is
 * transition_order then credit_order): the order, the pairs it may start from, the state reached,
 * the changes (an empty trade number leaves the row's), and each event with its delivery's id.
 */
export function orderMoveParams(
  orderId: string,
  move: Move<OrderStatus>,
  changes: TransitionChanges,
  events: TransitionEvent[],
): { ids: { eventId: string; deliveryId: string }[]; params: unknown[] } {
  const ids = events.map(() => ({ eventId: randomUUID(), deliveryId: randomUUID() }));
  const params = [
    orderId,
    move.pairs.map((p) => p.from),
    move.pairs.map((p) => p.orderType),
    move.to,
    changes.paid === true,
    changes.channelTradeNo || null,
    ids.map((i) => i.eventId),
    events.map((e) => e.type),
    events.map((e, n) => JSON.stringify(e.payload(ids[n].eventId))),
    ids.map((i) => i.deliveryId),
  ];
  return { ids, params };
}

/**
 * The one way an order or a refund changes state, with its events and their outbox rows: a call of
 * transition_order / transition_refund (libs/db/src/sql/transition-functions.ts), one statement,
 * atomic on its own and joining the caller's transaction when `em` is in one. The move (from
 * libs/orders' transition tables) names the (state, order type) pairs it may start from; of two
 * concurrent callers one moves the row, the other gets null and nothing is written.
 */
@Injectable()
export class TransitionRepository {
  async moveOrder(
    em: EntityManager,
    orderId: string,
    move: Move<OrderStatus>,
    changes: TransitionChanges,
    events: TransitionEvent[],
  ): Promise<Moved<Order> | null> {
    const { ids, params } = orderMoveParams(orderId, move, changes, events);
    const rows = await em.query<(WrittenRow & Record<string, unknown>)[]>(TRANSITION_ORDER, params);
    if (rows.length === 0) return null;
    return { row: hydrate(em, Order, rows[0]), events: recorded(ids, rows) };
  }

  /** moveOrder for each of `orders` (read locked by the caller) with one event each, in one statement; the ones moved. */
  async moveOrders(
    em: EntityManager,
    orders: Order[],
    move: Move<OrderStatus>,
    type: CallbackEventType,
    payload: (eventId: string, order: Order) => Record<string, unknown>,
  ): Promise<Moved<Order>[]> {
    if (orders.length === 0) return [];
    const ids = orders.map(() => ({ eventId: randomUUID(), deliveryId: randomUUID() }));
    const rows = await em.query<(WrittenRow & Record<string, unknown>)[]>(TRANSITION_ORDERS, [
      orders.map((o) => o.id),
      ids.map((i) => i.eventId),
      orders.map((o, n) => JSON.stringify(payload(ids[n].eventId, o))),
      ids.map((i) => i.deliveryId),
      move.pairs.map((p) => p.from),
      move.pairs.map((p) => p.orderType),
      move.to,
      type,
    ]);
    return rows.map((row) => ({ row: hydrate(em, Order, row), events: recorded([ids.find((i) => i.deliveryId === row.t_delivery_id)!], [row]) }));
  }

  async moveRefund(
    em: EntityManager,
    refundId: string,
    { from, to }: Pick<Move<RefundStatus>, 'from' | 'to'>,
    changes: RefundChanges,
    event: TransitionEvent,
  ): Promise<Moved<Refund> | null> {
    const ids = { eventId: randomUUID(), deliveryId: randomUUID() };
    const rows = await em.query<(WrittenRow & Record<string, unknown>)[]>(TRANSITION_REFUND, [
      refundId,
      from,
      to,
      changes.channelRefundNo ?? null,
      changes.failure ?? null,
      ids.eventId,
      event.type,
      JSON.stringify(event.payload(ids.eventId)),
      ids.deliveryId,
    ]);
    if (rows.length === 0) return null;
    return { row: hydrate(em, Refund, rows[0]), events: recorded([ids], rows) };
  }
}

/** The events as written, in the order given, from the rows the function returned. */
function recorded(ids: { eventId: string; deliveryId: string }[], rows: (WrittenRow & Record<string, unknown>)[]): RecordedEvent[] {
  const byDelivery = new Map(rows.filter((r) => r.t_delivery_id !== null).map((r) => [r.t_delivery_id, r]));
  return ids.map((i) => {
    const row = byDelivery.get(i.deliveryId);
    return {
      ...i,
      head: row?.t_head ? { id: i.deliveryId, merchantId: row.merchant_id as number, notifyUrl: row.t_notify_url } : null,
      noAddress: row !== undefined && row.t_notify_url === null,
    };
  });
}

/** An entity from a raw row whose columns carry their database names, as TypeORM would hydrate it. */
export function hydrate<T>(em: EntityManager, entity: EntityTarget<T> & (new () => T), row: Record<string, unknown>, prefix = ''): T {
  const made = new entity();
  const { driver } = em.connection;
  for (const column of em.connection.getMetadata(entity).columns) {
    (made as Record<string, unknown>)[column.propertyName] = driver.prepareHydratedValue(row[`${prefix}${column.databaseName}`], column);
  }
  return made;
}
