import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** The circuit of one (merchant, destination): opened by consecutive failures, probed, closed by a success. */
@Entity('callback_circuits')
@Index('ix_circuits_open', ['merchantId'], { where: '"open_since" IS NOT NULL' })
export class CallbackCircuit {
  @PrimaryColumn({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  /** scheme://host:port of the callback URL, as the address parser gives it. */
  @PrimaryColumn({ type: 'varchar', length: 600 })
  destination: string;

  @Column({ name: 'consecutive_failures', type: 'integer', default: 0 })
  consecutiveFailures: number;

  @Column({ name: 'open_since', type: 'timestamptz', nullable: true })
  openSince: Date | null;

  @Column({ name: 'next_probe_at', type: 'timestamptz', nullable: true })
  nextProbeAt: Date | null;

  @Column({ name: 'last_success_at', type: 'timestamptz', nullable: true })
  lastSuccessAt: Date | null;

  @Column({ name: 'last_failure_at', type: 'timestamptz', nullable: true })
  lastFailureAt: Date | null;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}
