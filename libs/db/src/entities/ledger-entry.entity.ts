import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { bigintNumber } from './transformers';

export type LedgerKind = 'order_credit' | 'order_deposit';

/** One line per order and kind: the unique index is what makes a credit happen once. */
@Entity('ledger_entries')
@Index('uq_ledger_order_kind', ['orderId', 'kind'], { unique: true })
@Index('ix_ledger_merchant', ['merchantId', 'createdAt'])
export class LedgerEntry {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  @Column({ name: 'order_id', type: 'bigint' })
  orderId: string;

  @Column({ type: 'varchar', length: 32 })
  kind: LedgerKind;

  @Column({ name: 'amount_fen', type: 'bigint', transformer: bigintNumber })
  amountFen: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
