import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { CallbackEventType, Order, OrderEventType } from '../entities';

export interface RecordedEvent {
  eventId: string;
  deliveryId: string;
}

/** The outbox: an order's event and its first callback delivery, written in the transition's transaction. */
@Injectable()
export class OrderEventRepository {
  async record(em: EntityManager, order: Order, type: OrderEventType, payload: (eventId: string) => Record<string, unknown>): Promise<RecordedEvent> {
    const eventId = await this.insertEvent(em, order, type, payload);
    const deliveryId = randomUUID();
    await em.query(
      `INSERT INTO "callback_deliveries" ("id", "event_id", "order_id", "merchant_id", "status", "attempts_made", "next_attempt_at")
       VALUES ($1, $2, $3, $4, 'pending', 0, now())`,
      [deliveryId, eventId, order.id, order.merchantId],
    );
    return { eventId, deliveryId };
  }

  /** An event kept in the order's history for reconciliation, with no callback; returns its id. */
  recordWithoutCallback(em: EntityManager, order: Order, type: Exclude<OrderEventType, CallbackEventType>, payload: (eventId: string) => Record<string, unknown>): Promise<string> {
    return this.insertEvent(em, order, type, payload);
  }

  private async insertEvent(em: EntityManager, order: Order, type: OrderEventType, payload: (eventId: string) => Record<string, unknown>): Promise<string> {
    const eventId = randomUUID();
    await em.query(`INSERT INTO "order_events" ("id", "order_id", "merchant_id", "type", "payload") VALUES ($1, $2, $3, $4, $5::jsonb)`, [
      eventId,
      order.id,
      order.merchantId,
      type,
      JSON.stringify(payload(eventId)),
    ]);
    return eventId;
  }
}
