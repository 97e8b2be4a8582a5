import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { bigintNumber } from './transformers';

@Entity('balances')
export class Balance {
  @PrimaryColumn({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  @Column({ name: 'available_fen', type: 'bigint', default: 0, transformer: bigintNumber })
  availableFen: number;

  @Column({ name: 'deposit_fen', type: 'bigint', default: 0, transformer: bigintNumber })
  depositFen: number;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
