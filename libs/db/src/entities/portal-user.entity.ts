import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/** A person who signs in to the merchant portal for one merchant (SPEC 8a); the email is unique whatever its case. */
@Entity('merchant_users')
@Index('ix_merchant_users_merchant', ['merchantId'])
export class PortalUser {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  @Column({ type: 'varchar', length: 254 })
  email: string;

  /** scrypt, never the password. */
  @Column({ name: 'password_hash', type: 'text' })
  passwordHash: string;

  @Column({ type: 'varchar', length: 16, default: 'active' })
  status: 'active' | 'disabled';

  /** Sessions older than this are ended. */
  @Column({ name: 'password_changed_at', type: 'timestamptz', default: () => 'now()' })
  passwordChangedAt: Date;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
