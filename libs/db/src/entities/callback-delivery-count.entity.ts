import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from './transformers';

/**
 * Deliveries by status, one row per (status, slot), kept by triggers on
 * callback_deliveries (migration 1764500000000); a status's count is the sum of its slots.
 */
@Entity('callback_delivery_counts')
export class CallbackDeliveryCount {
  @PrimaryColumn({ type: 'varchar', length: 16 })
  status: string;

  /** The writer's session slot (backend pid modulo 32), so writers rarely share a row. */
  @PrimaryColumn({ type: 'smallint' })
  slot: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  n: number;
}
