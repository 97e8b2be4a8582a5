import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import {
  type CallbackEventType,
  type Move,
  type Order,
  type OrderStatus,
  type RecordedEvent,
  type Refund,
  type RefundChanges,
  type RefundStatus,
  type TransitionChanges,
  type TransitionEvent,
  TransitionRepository,
} from '@app/db';
import { CallbackJobs } from '@app/callbacks';
import { type CancelReason, orderEventPayload, refundEventPayload } from './order-event-payload';

/** An event of an order's transition: its type and, for order.cancelled, why. */
export interface OrderEventSpec {
  type: CallbackEventType;
  reason?: CancelReason;
}

/** What goes with a transition in its transaction (a reversal, a payout's end); events it writes are delivered after the commit too. */
export type Alongside<T> = (em: EntityManager, moved: T) => Promise<RecordedEvent[] | void>;

/** The order as its event reports it: the status it moved to (updatetime and paid_at are the moved row's, set in SQL). */
function asStatus<T extends object>(row: T, status: string): T {
  return Object.assign(Object.create(Object.getPrototypeOf(row) as object) as T, row, { status });
}

/** An order's events for a move, their payloads from the order as read with the status reached. */
export function orderTransitionEvents(order: Order, to: OrderStatus, events: OrderEventSpec[]): TransitionEvent[] {
  const reported = asStatus(order, to);
  return events.map(({ type, reason }) => ({ type, payload: (eventId) => orderEventPayload(eventId, type, reported, reason) }));
}

/**
 * Transition, event and enqueue-after-commit, written once for orders (top-ups and sell orders)
 * and refunds: the move and its events' outbox rows by the one SQL writer (TransitionRepository),
 * what goes with it in the same transaction, then the deliveries' jobs once it committed.
 */
@Injectable()
export class Transitions {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly writer: TransitionRepository,
    private readonly callbacks: CallbackJobs,
  ) {}

  /**
   * Moves the order (or the one `order` makes inside the transaction: a row inserted with its
   * move) with its events. Null when the order was elsewhere: nothing written, nothing delivered.
   * Without `alongside` it is one statement, its own transaction.
   */
  async order(
    order: Order | ((em: EntityManager) => Promise<Order>),
    move: Move<OrderStatus>,
    events: OrderEventSpec[],
    { changes = {}, alongside }: { changes?: TransitionChanges; alongside?: Alongside<Order> } = {},
  ): Promise<Order | null> {
    const write = async (em: EntityManager): Promise<{ row: Order; events: RecordedEvent[] } | null> => {
      const read = typeof order === 'function' ? await order(em) : order;
      const moved = await this.writer.moveOrder(em, read.id, move, changes, orderTransitionEvents(read, move.to, events));
      if (!moved || !alongside) return moved;
      return { row: moved.row, events: [...moved.events, ...((await alongside(em, moved.row)) ?? [])] };
    };
    const written = typeof order === 'function' || alongside ? await this.dataSource.transaction(write) : await write(this.dataSource.manager);
    if (!written) return null;
    await this.deliver(written.events);
    return written.row;
  }

  /** A batch of locked orders (`lock` reads them in the transaction) moved with one event each; how many moved. */
  async orders(lock: (em: EntityManager) => Promise<Order[]>, move: Move<OrderStatus>, event: Required<OrderEventSpec>): Promise<number> {
    const deliveryIds = await this.dataSource.transaction(async (em) => {
      const moved = await this.writer.moveOrders(em, await lock(em), move, event.type, (eventId, order) =>
        orderEventPayload(eventId, event.type, asStatus(order, move.to), event.reason),
      );
      return moved.flatMap((m) => m.events.map((e) => e.deliveryId));
    });
    await this.callbacks.deliver(deliveryIds);
    return deliveryIds.length;
  }

  /** Moves the refund with its refund.* event on `order`, `alongside` in the same transaction. Null when it was elsewhere. */
  async refund(
    refund: Refund,
    order: Order,
    move: Pick<Move<RefundStatus>, 'from' | 'to'>,
    type: 'refund.succeeded' | 'refund.failed',
    changes: RefundChanges,
    alongside: Alongside<Refund>,
  ): Promise<Refund | null> {
    const event: TransitionEvent = { type, payload: (eventId) => refundEventPayload(eventId, type, asStatus(refund, move.to), order) };
    const written = await this.dataSource.transaction(async (em) => {
      const moved = await this.writer.moveRefund(em, refund.id, move, changes, event);
      if (!moved) return null;
      return { row: moved.row, events: [...moved.events, ...((await alongside(em, moved.row)) ?? [])] };
    });
    if (!written) return null;
    await this.deliver(written.events);
    return written.row;
  }

  /**
   * After the commit of one order's events (in seq order): the first one's delivery gets its job,
   * the later ones wait for it to end (SPEC 7 Order). When it was its order's head as it was
   * written it still is: its job without a read back. Else (an earlier event still pending, such
   * as a late payment's order.cancelled, which may end meanwhile) the heads are read after the commit.
   * A delivery written `no_address` gets no job and needs no read (SPEC 7 Address).
   */
  async deliver(events: RecordedEvent[]): Promise<void> {
    const first = events[0]?.head;
    const addressed = events.filter((e) => !e.noAddress);
    if (first) await this.callbacks.deliverHeads([first]);
    else if (addressed.length > 0) await this.callbacks.deliver(addressed.map((e) => e.deliveryId));
  }
}
