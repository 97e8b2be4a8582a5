import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { bigintNumber } from './transformers';

export const RECON_CLASSES = ['matched', 'missing_local', 'missing_channel', 'amount_mismatch', 'status_mismatch'] as const;
export type ReconClass = (typeof RECON_CLASSES)[number];
export type MovementKind = 'pay' | 'refund';

/** A bill line, or a movement of ours the bill lacks, with its reconciliation class. */
@Entity('recon_lines')
@Index('ix_recon_lines_run', ['runId', 'id'])
// recon_mismatches_total counts these: the matched majority stays out of the index.
@Index('ix_recon_lines_mismatch', ['class'], { where: `"class" <> 'matched'` })
export class ReconLine {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'run_id', type: 'bigint' })
  runId: string;

  @Column({ type: 'varchar', length: 16 })
  class: ReconClass;

  @Column({ type: 'varchar', length: 8 })
  kind: MovementKind;

  @Column({ name: 'order_no', type: 'varchar', length: 64, nullable: true })
  orderNo: string | null;

  @Column({ name: 'refund_no', type: 'varchar', length: 64, nullable: true })
  refundNo: string | null;

  @Column({ name: 'channel_trade_no', type: 'varchar', length: 128, nullable: true })
  channelTradeNo: string | null;

  @Column({ name: 'bill_amount_fen', type: 'bigint', nullable: true, transformer: bigintNumber })
  billAmountFen: number | null;

  @Column({ name: 'our_amount_fen', type: 'bigint', nullable: true, transformer: bigintNumber })
  ourAmountFen: number | null;

  @Column({ name: 'fee_fen', type: 'bigint', nullable: true, transformer: bigintNumber })
  feeFen: number | null;

  @Column({ name: 'our_status', type: 'varchar', length: 16, nullable: true })
  ourStatus: string | null;

  @Column({ name: 'bill_line_no', type: 'integer', nullable: true })
  billLineNo: number | null;

  /** The bill's line as read. */
  @Column({ name: 'bill_line', type: 'text', nullable: true })
  billLine: string | null;

  @Column({ type: 'varchar', length: 128, nullable: true })
  note: string | null;

  @Column({ type: 'varchar', length: 32, nullable: true })
  resolution: string | null;
}
