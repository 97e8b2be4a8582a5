import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Order, OrderEventType } from '../entities';

export interface RecordedEvent {
  eventId: string;
  deliveryId: string;
}

/** The outbox: an order's event and its first callback delivery, written in the transition's transaction. */
@Injectable()
export class OrderEventRepository {
  async record(em: EntityManager, order: Order, type: OrderEventType, payload: (eventId: string) => Record<string, unknown>): Promise<RecordedEvent> {
    const eventId = randomUUID();
    const deliveryId = randomUUID();
    await em.query(`INSERT INTO "order_events" ("id", "order_id", "merchant_id", "type", "payload") VALUES ($1, $2, $3, $4, $5::jsonb)`, [
      eventId,
      order.id,
      order.merchantId,
      type,
      JSON.stringify(payload(eventId)),
    ]);
    await em.query(
      `INSERT INTO "callback_deliveries" ("id", "event_id", "order_id", "merchant_id", "status", "attempts_made", "next_attempt_at")
       VALUES ($1, $2, $3, $4, 'pending', 0, now())`,
      [deliveryId, eventId, order.id, order.merchantId],
    );
    return { eventId, deliveryId };
  }

  /**
   * One event of `type` and its first delivery for each order, in a single statement: a batch
   * of transitions (the expiry pass) writes its outbox in one round trip. Same rows as record().
   */
  async recordMany(em: EntityManager, orders: Order[], type: OrderEventType, payload: (eventId: string, order: Order) => Record<string, unknown>): Promise<RecordedEvent[]> {
    if (orders.length === 0) return [];
    const recorded = orders.map(() => ({ eventId: randomUUID(), deliveryId: randomUUID() }));
    await em.query(
      `WITH events AS (
         INSERT INTO "order_events" ("id", "order_id", "merchant_id", "type", "payload")
         SELECT e.id, e.order_id, e.merchant_id, $4, e.payload FROM unnest($1::uuid[], $2::bigint[], $3::int[], $5::jsonb[]) AS e(id, order_id, merchant_id, payload)
         RETURNING "id", "order_id", "merchant_id")
       INSERT INTO "callback_deliveries" ("id", "event_id", "order_id", "merchant_id", "status", "attempts_made", "next_attempt_at")
       SELECT d.id, events.id, events.order_id, events.merchant_id, 'pending', 0, now()
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
}
