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
}
