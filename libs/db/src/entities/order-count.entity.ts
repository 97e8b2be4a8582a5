import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from './transformers';

/** The key and count both order counters share; a key's count is the sum over its slots. */
export abstract class OrderCounterSlot {
  @PrimaryColumn({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  @PrimaryColumn({ type: 'varchar', length: 16 })
  status: string;

  @PrimaryColumn({ name: 'order_type', type: 'smallint' })
  orderType: number;

  @PrimaryColumn({ type: 'smallint' })
  slot: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  n: number;
}

/**
 * One slot of a merchant's order count by status and type, kept by the orders' statement triggers
 * (libs/db/src/sql/order-counts-apply.ts).
 */
@Entity('order_counts')
export class OrderCount extends OrderCounterSlot {}
