import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import type { CallbackEventType, Order, OrderEventType } from '../entities';
import type { DeliveryHead } from './callback-attempt.repository';
import { orderHeadSql } from '../sql/callback-functions';
import { deliveryAddressSql } from './delivery-address';

export interface RecordedEvent {
  eventId: string;
  deliveryId: string;
  /**
   * The delivery, when no earlier delivery of the order was pending as the row was written: the delivery
   * is its order's head, and stays so through the commit (an earlier one written later in the
   * same transaction aside), so its job can be added without reading it back.
   */
  head?: DeliveryHead | null;
  /** Written `no_address` (SPEC 7 Address): no job now or later, nothing to read back after the commit. */
  noAddress?: boolean;
}

/** An event as the portal's timeline shows it. */
export interface OrderEventSummary {
  id: string;
  type: OrderEventType;
  createdAt: Date;
}

/** The outbox: an order's event and its first callback delivery, written in the transition's transaction. */
@Injectable()
export class OrderEventRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The order's events, oldest first, when the order is this merchant's. */
  listForOrder(merchantId: number, orderId: string): Promise<OrderEventSummary[]> {
    return this.dataSource.query(
      `SELECT "id", "type", "created_at" AS "createdAt" FROM "order_events" WHERE "merchant_id" = $1 AND "order_id" = $2 ORDER BY "seq"`,
      [merchantId, orderId],
    );
  }

  /** `refundId`: the refund a refund.* event is about (its notify_url comes first). The event and its delivery in one statement. */
  async record(
    em: EntityManager,
    order: Order,
    type: CallbackEventType,
    payload: (eventId: string) => Record<string, unknown>,
    refundId: string | null = null,
  ): Promise<RecordedEvent> {
    const eventId = randomUUID();
    const deliveryId = randomUUID();
    // The head test reads the rows before this statement: earlier statements of this transaction and committed ones.
    const rows = await em.query<{ head: boolean; merchant_id: number; notify_url: string | null }[]>(
      `WITH "event" AS (
         INSERT INTO "order_events" ("id", "order_id", "merchant_id", "type", "payload", "refund_id") VALUES ($1, $2, $3, $4, $5::jsonb, $6)
         RETURNING "id", "order_id", "refund_id", "seq")
       INSERT INTO "callback_deliveries" AS "d" ("id", "event_id", "order_id", "merchant_id", "status", "attempts_made", "next_attempt_at", "notify_url", "event_seq")
       SELECT $7, "event"."id", $2, $3, 'pending', 0, now(), ${deliveryAddressSql('"event"')}, "event"."seq" FROM "event"
       RETURNING "d"."merchant_id", "d"."notify_url", ${orderHeadSql('"d"')} AS "head"`,
      [eventId, order.id, order.merchantId, type, JSON.stringify(payload(eventId)), refundId, deliveryId],
    );
    const row = rows[0];
    return {
      eventId,
      deliveryId,
      head: row?.head === true ? { id: deliveryId, merchantId: row.merchant_id, notifyUrl: row.notify_url } : null,
      noAddress: row !== undefined && row.notify_url === null,
    };
  }

  /**
   * One event of `type` and its first delivery for each order, in a single statement: a batch
   * of transitions (the expiry pass) writes its outbox in one round trip. Same rows as record().
   */
  async recordMany(
    em: EntityManager,
    orders: Order[],
    type: CallbackEventType,
    payload: (eventId: string, order: Order) => Record<string, unknown>,
  ): Promise<RecordedEvent[]> {
    if (orders.length === 0) return [];
    const recorded = orders.map(() => ({ eventId: randomUUID(), deliveryId: randomUUID() }));
    await em.query(
      `WITH events AS (
         INSERT INTO "order_events" ("id", "order_id", "merchant_id", "type", "payload")
         SELECT e.id, e.order_id, e.merchant_id, $4, e.payload FROM unnest($1::uuid[], $2::bigint[], $3::int[], $5::jsonb[]) AS e(id, order_id, merchant_id, payload)
         RETURNING "id", "order_id", "merchant_id", "refund_id", "seq")
       INSERT INTO "callback_deliveries" ("id", "event_id", "order_id", "merchant_id", "status", "attempts_made", "next_attempt_at", "notify_url", "event_seq")
       SELECT d.id, events.id, events.order_id, events.merchant_id, 'pending', 0, now(), ${deliveryAddressSql('events')}, events.seq
         FROM unnest($6::uuid[], $1::uuid[]) AS d(id, event_id) JOIN events ON events.id = d.event_id`,
      [
        recorded.map((r) => r.eventId),
        orders.map((o) => o.id),
        orders.map((o) => o.merchantId),
        type,
        orders.map((o, i) => JSON.stringify(payload(recorded[i].eventId, o))),
        recorded.map((r) => r.deliveryId),
      ],
    );
    return recorded;
  }

  /** An event kept in the order's history for reconciliation, with no callback; returns its id. */
  recordWithoutCallback(
    em: EntityManager,
    order: Order,
    type: Exclude<OrderEventType, CallbackEventType>,
    payload: (eventId: string) => Record<string, unknown>,
  ): Promise<string> {
    return this.insertEvent(em, order, type, payload);
  }

  private async insertEvent(
    em: EntityManager,
    order: Order,
    type: OrderEventType,
    payload: (eventId: string) => Record<string, unknown>,
    refundId: string | null = null,
  ): Promise<string> {
    const eventId = randomUUID();
    await em.query(`INSERT INTO "order_events" ("id", "order_id", "merchant_id", "type", "payload", "refund_id") VALUES ($1, $2, $3, $4, $5::jsonb, $6)`, [
      eventId,
      order.id,
      order.merchantId,
      type,
      JSON.stringify(payload(eventId)),
      refundId,
    ]);
    return eventId;
  }
}
