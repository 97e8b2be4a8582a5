import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** The delivery log: one row per HTTP attempt, written by the worker. */
@Entity('callback_attempts')
@Index('uq_attempts_delivery_number', ['deliveryId', 'number'], { unique: true })
export class CallbackAttempt {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'delivery_id', type: 'uuid' })
  deliveryId: string;

  @Column({ type: 'integer' })
  number: number;

  @Column({ name: 'attempted_at', type: 'timestamptz' })
  attemptedAt: Date;

  @Column({ type: 'varchar', length: 512, nullable: true })
  url: string | null;

  @Column({ name: 'http_status', type: 'integer', nullable: true })
  httpStatus: number | null;

  @Column({ name: 'duration_ms', type: 'integer' })
  durationMs: number;

  /** First 1 KiB of the answer. */
  @Column({ name: 'response_excerpt', type: 'text', nullable: true })
  responseExcerpt: string | null;

  @Column({ type: 'text', nullable: true })
  error: string | null;
}
