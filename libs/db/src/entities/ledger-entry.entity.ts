import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { bigintNumber } from './transformers';

/** Which balance a kind of entry moves, and what it is about (an order or a refund). */
export const LEDGER_KINDS = {
  /** A completed top-up: merchant_actual_amount to the available balance. */
  order_credit: { account: 'available', subject: 'order' },
  /** A completed top-up: deposit_amount to the deposit balance. */
  order_deposit: { account: 'deposit', subject: 'order' },
  /** A refund, at its creation: refund_amount out of the available balance. */
  refund_debit: { account: 'available', subject: 'refund' },
  /** A failed refund: its debit given back. */
  refund_reversal: { account: 'available', subject: 'refund' },
  /** A sell order, at its creation: cny_amount + service_amount out of the available balance. */
  sell_debit: { account: 'available', subject: 'order' },
  /** A refused payout: its debit given back. */
  sell_reversal: { account: 'available', subject: 'order' },
} as const;
export type LedgerKind = keyof typeof LEDGER_KINDS;
export type LedgerAccount = (typeof LEDGER_KINDS)[LedgerKind]['account'];

/**
 * One line per kind and subject (an order, or a refund of it): the unique indexes are what make
 * a credit, a debit or a reversal happen once. `amount_fen` is signed: debits are negative.
 */
@Entity('ledger_entries')
@Index('uq_ledger_order_kind', ['orderId', 'kind'], { unique: true, where: '"refund_id" IS NULL' })
@Index('uq_ledger_refund_kind', ['refundId', 'kind'], { unique: true, where: '"refund_id" IS NOT NULL' })
// In statement order; the migration also INCLUDEs kind and amount_fen, so a day is counted and summed from the index alone.
@Index('ix_ledger_merchant_time', ['merchantId', 'createdAt', 'id'])
export class LedgerEntry {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  /** The order the money moved for; for a refund's entries, the refunded order. */
  @Column({ name: 'order_id', type: 'bigint' })
  orderId: string;

  @Column({ name: 'refund_id', type: 'bigint', nullable: true })
  refundId: string | null;

  @Column({ type: 'varchar', length: 32 })
  kind: LedgerKind;

  @Column({ name: 'amount_fen', type: 'bigint', transformer: bigintNumber })
  amountFen: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
