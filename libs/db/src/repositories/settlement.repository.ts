import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { OrderStatus } from '../entities';
import { preparedQuery } from '../prepared-query';
import type { Move } from '../state-move';
import type { RecordedEvent } from './order-event.repository';
import { type TransitionChanges, type TransitionEvent, orderMoveParams } from './transition.repository';

/** An event the settlement records, in order; its payload's updatetime and paid_at are set from the settled row. */
export type SettlementEvent = TransitionEvent;

/** What a settlement wrote: its events in the order given, each with its delivery. */
export interface Settled {
  latePayment: boolean;
  events: RecordedEvent[];
}

const SETTLE = `SELECT "delivery_id", "head", "merchant_id", "notify_url", "late_payment"
  FROM "settle_order"($1, $2::varchar[], $3::smallint[], $4, $5, $6, $7::uuid[], $8::varchar[], $9::jsonb[], $10::uuid[])`;

interface SettledRow {
  delivery_id: string;
  head: boolean;
  merchant_id: number;
  notify_url: string | null;
  late_payment: boolean;
}

/**
 * A top-up's settlement in one statement, settle_order (libs/db/src/sql/settlement-functions.ts):
 * the order's conditional move to completed, its events and their deliveries (the outbox), then the
 * credit, the balance row last. Outside a transaction it is its own (no BEGIN, no COMMIT round
 * trip); inside one it joins it.
 */
@Injectable()
export class SettlementRepository {
  /** Null when the move did not apply (the order was elsewhere, or settled by a concurrent caller): nothing written, nothing credited. */
  async settle(em: EntityManager, orderId: string, move: Move<OrderStatus>, changes: TransitionChanges, events: SettlementEvent[]): Promise<Settled | null> {
    const { ids, params } = orderMoveParams(orderId, move, changes, events);
    // Outside a transaction (a final payment, the confirm job), prepared on the pool: every paid order runs it.
    const rows = em.queryRunner ? await em.query<SettledRow[]>(SETTLE, params) : await preparedQuery<SettledRow>(em.connection, 'settle_order', SETTLE, params);
    if (rows.length === 0) return null;
    const byDelivery = new Map(rows.map((r) => [r.delivery_id, r]));
    return {
      latePayment: rows[0].late_payment,
      events: ids.map((i) => {
        const row = byDelivery.get(i.deliveryId);
        return {
          ...i,
          head: row?.head ? { id: i.deliveryId, merchantId: row.merchant_id, notifyUrl: row.notify_url } : null,
          noAddress: row !== undefined && row.notify_url === null,
        };
      }),
    };
  }
}
