import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** `no_address`: the event had no address to go to (SPEC 7 Address): no job, no attempt; a resend or recover writes a new delivery. */
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'no_address';
/** `event`: the outbox row of a transition; `resend`: asked for by callbackResend (limited per order and hour). */
export type DeliveryOrigin = 'event' | 'resend' | 'recover';

/** One attempt series to send one event to the merchant: the outbox row and its truth; its BullMQ job (id = this id) carries it. */
@Entity('callback_deliveries')
@Index('ix_deliveries_due', ['nextAttemptAt'], { where: `"status" = 'pending'` })
@Index('ix_deliveries_event', ['eventId'])
@Index('ix_deliveries_order_resends', ['orderId', 'createdAt'], { where: `"origin" = 'resend'` })
@Index('ix_deliveries_merchant_failed', ['merchantId', 'updatedAt'], { where: `"status" = 'failed'` })
export class CallbackDelivery {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ name: 'event_id', type: 'uuid' })
  eventId: string;

  @Column({ name: 'order_id', type: 'bigint' })
  orderId: string;

  @Column({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  @Column({ type: 'varchar', length: 16, default: 'pending' })
  status: DeliveryStatus;

  @Column({ type: 'varchar', length: 8, default: 'event' })
  origin: DeliveryOrigin;

  @Column({ name: 'attempts_made', type: 'integer', default: 0 })
  attemptsMade: number;

  /** When a pending delivery is due: its next attempt (the sweep re-adds a due delivery whose job is gone). */
  @Column({ name: 'next_attempt_at', type: 'timestamptz' })
  nextAttemptAt: Date;

  /** SPEC 7 Address: the refund's, else the order's, else the merchant's notify_url, resolved when the row is written. */
  @Column({ name: 'notify_url', type: 'varchar', length: 512, nullable: true })
  notifyUrl: string | null;

  /** scheme://host:port of notifyUrl by the one parser, written by the worker's first claim (its circuit's key, with the merchant). */
  @Column({ type: 'varchar', length: 600, default: '' })
  destination: string;

  /** Its event's place in the order's history: a later event waits for the earlier ones (copied from the event when written). */
  @Column({ name: 'event_seq', type: 'bigint', default: 0 })
  eventSeq: string;

  /** While a worker holds an attempt in flight; an expired lease is claimable again. */
  @Column({ name: 'lease_until', type: 'timestamptz', nullable: true })
  leaseUntil: Date | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
