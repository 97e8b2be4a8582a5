import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

export type MerchantStatus = 'active' | 'disabled';
/** SPEC 5: a test merchant pays only through the sandbox, a live one never does; fixed at creation. */
export const MERCHANT_MODES = ['live', 'test'] as const;
export type MerchantMode = (typeof MERCHANT_MODES)[number];

@Entity('merchants')
export class Merchant {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ type: 'varchar', length: 128 })
  name: string;

  @Column({ type: 'varchar', length: 16, default: 'active' })
  status: MerchantStatus;

  @Column({ type: 'varchar', length: 8, default: 'live' })
  mode: MerchantMode;

  @Index('uq_merchants_api_key', { unique: true })
  @Column({ name: 'api_key', type: 'varchar', length: 64 })
  apiKey: string;

  /** AES-256-GCM under MASTER_KEY (SecretBox), context "merchant:{api_key}". */
  @Column({ name: 'api_secret_enc', type: 'text' })
  apiSecretEnc: string;

  /** The secret before the last rotation, sealed with context "merchant:{api_key}:previous"; verifies until apiSecretPreviousUntil (SPEC 3). */
  @Column({ name: 'api_secret_previous_enc', type: 'text', nullable: true })
  apiSecretPreviousEnc: string | null;

  @Column({ name: 'api_secret_previous_until', type: 'timestamptz', nullable: true })
  apiSecretPreviousUntil: Date | null;

  @Column({ name: 'notify_url', type: 'varchar', length: 512, nullable: true })
  notifyUrl: string | null;

  /** Text with eight decimals, as numeric(10,8) keeps it. */
  @Column({ name: 'deposit_rate', type: 'numeric', precision: 10, scale: 8, default: '0' })
  depositRate: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
