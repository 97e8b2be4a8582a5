import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import type { CallbackEventType, Order, OrderEventType } from '../entities';
import type { DeliveryHead } from './callback-attempt.repository';

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

/** An order's history: its events as the portal lists them, and the ones with no callback (a transition's are TransitionRepository's). */
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
