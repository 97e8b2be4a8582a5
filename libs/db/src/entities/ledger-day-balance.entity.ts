import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from './transformers';

/**
 * A merchant's balances at the end of one closed Asia/Shanghai day and the movements of that day
 * (SPEC 6, statements): written once, when a statement first needs the day, never updated.
 */
@Entity('ledger_day_balances')
export class LedgerDayBalance {
  @PrimaryColumn({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  /** YYYY-MM-DD, Asia/Shanghai. */
  @PrimaryColumn({ type: 'date' })
  day: string;

  @Column({ name: 'available_fen', type: 'bigint', transformer: bigintNumber })
  availableFen: number;

  @Column({ name: 'deposit_fen', type: 'bigint', transformer: bigintNumber })
  depositFen: number;

  @Column({ type: 'integer' })
  movements: number;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
