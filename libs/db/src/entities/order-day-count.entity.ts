import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from './transformers';

/** Like OrderCount, per UTC day of the orders' created_at: what lets a time-bounded total skip whole days. */
@Entity('order_day_counts')
export class OrderDayCount {
  @PrimaryColumn({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  /** YYYY-MM-DD, UTC. */
  @PrimaryColumn({ type: 'date' })
  day: string;

  @PrimaryColumn({ type: 'varchar', length: 16 })
  status: string;

  @PrimaryColumn({ name: 'order_type', type: 'smallint' })
  orderType: number;

  @PrimaryColumn({ type: 'smallint' })
  slot: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  n: number;
}
