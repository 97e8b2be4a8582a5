import { Column, Entity, PrimaryColumn } from 'typeorm';

/** The queue backend every process of this deployment uses, as the first one to start recorded it (SPEC 10). */
@Entity('queue_backend')
export class QueueBackendRecord {
  @PrimaryColumn({ type: 'smallint' })
  id: number;

  @Column({ type: 'varchar', length: 16 })
  backend: 'redis' | 'postgres';

  @Column({ name: 'recorded_at', type: 'timestamptz' })
  recordedAt: Date;
}
