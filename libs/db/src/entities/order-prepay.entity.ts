import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * The trade a provider opened for an order before the payer was sent to it (SPEC 6, the cashier):
 * one per order, its `mode` binding the order to one trade type at the provider (WeChat keeps one
 * per out_trade_no). `prepay` is null between the claim and the provider's answer.
 */
@Entity('order_prepays')
export class OrderPrepay {
  @PrimaryColumn({ name: 'order_id', type: 'bigint' })
  orderId: string;

  @Column({ type: 'varchar', length: 8 })
  mode: string;

  /** Whom the prepay is for: JSAPI's openid (fixed by the first), H5's client address (the payer's current one). */
  @Column({ type: 'varchar', length: 128, nullable: true })
  payer: string | null;

  @Column({ type: 'text', nullable: true })
  prepay: string | null;

  @Column({ name: 'valid_until', type: 'timestamptz', nullable: true })
  validUntil: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}
