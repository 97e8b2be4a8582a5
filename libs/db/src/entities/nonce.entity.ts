import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** Used nonces when there is no Redis (the embedded mode); the primary key makes recording atomic. */
@Entity('nonces')
@Index('ix_nonces_expires', ['expiresAt'])
export class Nonce {
  @PrimaryColumn({ name: 'api_key', type: 'varchar', length: 64 })
  apiKey: string;

  @PrimaryColumn({ type: 'varchar', length: 64 })
  nonce: string;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;
}
