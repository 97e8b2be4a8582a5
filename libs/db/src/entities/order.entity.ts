import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { bigintNumber } from './transformers';

export const ORDER_STATUSES = ['pending', 'paid', 'confirmed', 'completed', 'cancelled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

/** Paid but not completed: the lifecycle moves such an order on within minutes, so one left here is stuck money. */
export const UNSETTLED_ORDER_STATUSES: readonly OrderStatus[] = ['paid', 'confirmed'];

/** The predicate of an unsettled order, as the sweep, the stuck-money gauge, order:stuck and their partial index all write it. */
export function unsettledOrderSql(status = '"status"'): string {
  return `${status} IN (${UNSETTLED_ORDER_STATUSES.map((s) => `'${s}'`).join(', ')})`;
}

@Entity('orders')
@Index('uq_orders_merchant_order_no', ['merchantId', 'merchantOrderNo'], { unique: true, where: '"merchant_order_no" IS NOT NULL' })
// orderQueryList: newest first within a merchant, optionally within one status (SPEC 5).
@Index('ix_orders_merchant_created', ['merchantId', 'createdAt', 'orderNo'])
@Index('ix_orders_merchant_status_created', ['merchantId', 'status', 'createdAt', 'orderNo'])
// The portal's overview: a merchant's paid orders by day.
@Index('ix_orders_merchant_paid', ['merchantId', 'paidAt'], { where: '"paid_at" IS NOT NULL' })
@Index('ix_orders_pending_expiry', ['expiresAt'], { where: `"status" = 'pending'` })
// Stuck money (the gauge, order:stuck): orders paid but not completed.
@Index('ix_orders_unsettled', ['updatedAt'], { where: unsettledOrderSql() })
export class Order {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Index('uq_orders_order_no', { unique: true })
  @Column({ name: 'order_no', type: 'varchar', length: 22 })
  orderNo: string;

  @Column({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  @Column({ name: 'channel_id', type: 'integer' })
  channelId: number;

  @Column({ name: 'order_type', type: 'smallint' })
  orderType: number;

  @Column({ type: 'varchar', length: 16 })
  status: OrderStatus;

  @Column({ name: 'payment_method', type: 'varchar', length: 16, nullable: true })
  paymentMethod: string | null;

  @Column({ name: 'cny_fen', type: 'bigint', transformer: bigintNumber })
  cnyFen: number;

  @Column({ name: 'service_rate', type: 'numeric', precision: 10, scale: 8 })
  serviceRate: string;

  @Column({ name: 'service_fen', type: 'bigint', transformer: bigintNumber })
  serviceFen: number;

  @Column({ name: 'deposit_rate', type: 'numeric', precision: 10, scale: 8 })
  depositRate: string;

  @Column({ name: 'deposit_fen', type: 'bigint', transformer: bigintNumber })
  depositFen: number;

  @Column({ name: 'merchant_actual_fen', type: 'bigint', transformer: bigintNumber })
  merchantActualFen: number;

  @Column({ name: 'merchant_order_no', type: 'varchar', length: 64, nullable: true })
  merchantOrderNo: string | null;

  @Column({ name: 'notify_url', type: 'varchar', length: 512, nullable: true })
  notifyUrl: string | null;

  @Column({ name: 'customer_name', type: 'varchar', length: 64, nullable: true })
  customerName: string | null;

  /** What the payer buys (SPEC 5), as given or defaulted at creation; null on orders made before it existed. */
  @Column({ type: 'varchar', length: 128, nullable: true })
  subject: string | null;

  /** Where the payer's browser goes after paying or giving up (SPEC 5); null when the shop gave none. */
  @Column({ name: 'return_url', type: 'varchar', length: 512, nullable: true })
  returnUrl: string | null;

  /** sha256 of the createOrder parameters that define the order, to tell a true repeat from a conflict. */
  @Column({ name: 'request_hash', type: 'varchar', length: 64 })
  requestHash: string;

  @Column({ name: 'pay_url', type: 'text', nullable: true })
  payUrl: string | null;

  @Column({ name: 'channel_trade_no', type: 'varchar', length: 128, nullable: true })
  channelTradeNo: string | null;

  /** A success notification that arrived after the order was cancelled: the money was taken, so it counts. */
  @Column({ name: 'late_payment', type: 'boolean', default: false })
  latePayment: boolean;

  @Column({ name: 'paid_at', type: 'timestamptz', nullable: true })
  paidAt: Date | null;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  /** The lost-notification checkpoints (1 min, 5 min, before expiry) already queried at the channel: 0 to 3. */
  @Column({ name: 'channel_queries', type: 'smallint', default: 0 })
  channelQueries: number;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
