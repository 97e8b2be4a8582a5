import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';
/** `event`: the outbox row of a transition; `resend`: asked for by callbackResend (limited per order and hour). */
export type DeliveryOrigin = 'event' | 'resend' | 'recover';

/** One attempt series to send one event to the merchant (the outbox row; job id = id). */
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

  /** When the sweeper should consider the job lost if it is still pending. */
  @Column({ name: 'next_attempt_at', type: 'timestamptz' })
  nextAttemptAt: Date;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
