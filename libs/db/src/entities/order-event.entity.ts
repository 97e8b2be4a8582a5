import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/** The events merchants receive as callbacks (SPEC 7); a refund's belong to its order. */
export const CALLBACK_EVENT_TYPES = ['order.paid', 'order.completed', 'order.cancelled', 'refund.succeeded', 'refund.failed'] as const;
export type CallbackEventType = (typeof CALLBACK_EVENT_TYPES)[number];
/** Every event an order's history records; the others are kept for reconciliation and the portal's timeline, never sent. */
export const ORDER_EVENT_TYPES = [...CALLBACK_EVENT_TYPES, 'payment.amount_mismatch', 'payment.attempt_failed'] as const;
export type OrderEventType = (typeof ORDER_EVENT_TYPES)[number];

/**
 * What happened to an order, written in the transaction of the transition. `payload` is the
 * callback body at that moment, without the per-attempt fields (api_key, timestamp, nonce,
 * signature), so a resend carries the same facts and the same event_id.
 */
@Entity('order_events')
@Index('ix_order_events_order', ['orderId', 'createdAt'])
export class OrderEvent {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ name: 'order_id', type: 'bigint' })
  orderId: string;

  @Column({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  /** For refund.* events: the refund, whose notify_url comes before the order's. */
  @Column({ name: 'refund_id', type: 'bigint', nullable: true })
  refundId: string | null;

  @Column({ type: 'varchar', length: 32 })
  type: OrderEventType;

  /** The per-order delivery order of the callbacks (a global sequence): a delivery carries its event's. */
  @Column({ type: 'bigint', default: () => "nextval('order_events_seq_seq')" })
  seq: string;

  @Column({ type: 'jsonb' })
  payload: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 6 })
  createdAt: Date;
}
