import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { ChannelTalkColumns } from './channel-talk.columns';
import { bigintNumber } from './transformers';

export const REFUND_STATUSES = ['processing', 'succeeded', 'failed'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

/** Money given back to the payer of a completed top-up, out of the merchant's available balance. */
@Entity('refunds')
@Index('uq_refunds_refund_no', ['refundNo'], { unique: true })
@Index('uq_refunds_merchant_refund_no', ['merchantId', 'merchantRefundNo'], { unique: true })
// One refund in progress per order: the database refuses a second, whatever the timing.
@Index('uq_refunds_order_processing', ['orderId'], { unique: true, where: `"status" = 'processing'` })
@Index('ix_refunds_order', ['orderId', 'createdAt'])
export class Refund extends ChannelTalkColumns {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'refund_no', type: 'varchar', length: 22 })
  refundNo: string;

  @Column({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  @Column({ name: 'order_id', type: 'bigint' })
  orderId: string;

  /** The refunded order's number, which never changes: every answer about the refund shows it. */
  @Column({ name: 'order_no', type: 'varchar', length: 22 })
  orderNo: string;

  @Column({ name: 'merchant_refund_no', type: 'varchar', length: 64 })
  merchantRefundNo: string;

  @Column({ name: 'refund_fen', type: 'bigint', transformer: bigintNumber })
  refundFen: number;

  @Column({ type: 'varchar', length: 128, nullable: true })
  reason: string | null;

  @Column({ name: 'notify_url', type: 'varchar', length: 512, nullable: true })
  notifyUrl: string | null;

  /** sha256 of the refundCreate parameters that define the refund, to tell a true repeat from a conflict. */
  @Column({ name: 'request_hash', type: 'varchar', length: 64 })
  requestHash: string;

  @Column({ type: 'varchar', length: 16 })
  status: RefundStatus;

  /** The channel's number for the refund, once it accepted it: from then on the refund is only ever queried. */
  @Column({ name: 'channel_refund_no', type: 'varchar', length: 128, nullable: true })
  channelRefundNo: string | null;

  @Column({ name: 'attempted_at', type: 'timestamptz', nullable: true })
  attemptedAt: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
