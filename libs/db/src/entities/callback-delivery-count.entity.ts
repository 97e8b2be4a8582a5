import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { bigintNumber } from './transformers';

/**
 * Changes to the number of deliveries by status, appended by triggers on callback_deliveries
 * (migration 1764500000000) and folded to one row per status by the worker's sweep; a status's
 * count is the sum of its rows.
 */
@Entity('callback_delivery_counts')
export class CallbackDeliveryCount {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ type: 'varchar', length: 16 })
  status: string;

  @Column({ type: 'bigint', transformer: bigintNumber })
  n: number;
}
