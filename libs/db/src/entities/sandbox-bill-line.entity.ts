import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import type { MovementKind } from './recon-line.entity';
import { bigintNumber } from './transformers';

/**
 * One line of the sandbox's own books: money its checkout page took, or a refund it gave. Its unique
 * index (channel_id, kind, COALESCE(refund_no, order_no)) is an expression, which the migration alone declares.
 */
@Entity('sandbox_bill_lines')
@Index('ix_sandbox_bill_day', ['channelId', 'occurredAt'])
export class SandboxBillLine {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'channel_id', type: 'integer' })
  channelId: number;

  @Column({ type: 'varchar', length: 8 })
  kind: MovementKind;

  @Column({ name: 'trade_no', type: 'varchar', length: 128 })
  tradeNo: string;

  @Column({ name: 'order_no', type: 'varchar', length: 22 })
  orderNo: string;

  @Column({ name: 'refund_no', type: 'varchar', length: 22, nullable: true })
  refundNo: string | null;

  @Column({ name: 'amount_fen', type: 'bigint', transformer: bigintNumber })
  amountFen: number;

  @Column({ name: 'fee_fen', type: 'bigint', default: 0, transformer: bigintNumber })
  feeFen: number;

  @Column({ name: 'occurred_at', type: 'timestamptz', default: () => 'now()' })
  occurredAt: Date;
}
