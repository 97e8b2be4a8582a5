import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { bigintNumber } from './transformers';

/** One reconciliation of a channel's bill of one day (SPEC 6): the raw bill, its SHA-256 and the totals. */
@Entity('recon_runs')
@Index('uq_recon_runs_bill', ['channelId', 'billDate', 'billSha256'], { unique: true })
@Index('ix_recon_runs_date', ['billDate', 'channelId', 'id'])
export class ReconRun {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'channel_id', type: 'integer' })
  channelId: number;

  /** YYYY-MM-DD. */
  @Column({ name: 'bill_date', type: 'date' })
  billDate: string;

  @Column({ type: 'varchar', length: 16 })
  status: 'completed' | 'refused';

  @Column({ name: 'bill_format', type: 'varchar', length: 16 })
  billFormat: string;

  @Column({ name: 'bill_sha256', type: 'char', length: 64 })
  billSha256: string;

  @Column({ name: 'bill_raw', type: 'bytea' })
  billRaw: Buffer;

  /** Why the bill was refused. */
  @Column({ type: 'varchar', length: 512, nullable: true })
  error: string | null;

  @Column({ name: 'bill_total_fen', type: 'bigint', default: 0, transformer: bigintNumber })
  billTotalFen: number;

  @Column({ name: 'our_total_fen', type: 'bigint', default: 0, transformer: bigintNumber })
  ourTotalFen: number;

  @Column({ name: 'fee_fen', type: 'bigint', default: 0, transformer: bigintNumber })
  feeFen: number;

  @Column({ name: 'difference_fen', type: 'bigint', default: 0, transformer: bigintNumber })
  differenceFen: number;

  /** Lines per class. */
  @Column({ type: 'jsonb', default: {} })
  counts: Record<string, number>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
