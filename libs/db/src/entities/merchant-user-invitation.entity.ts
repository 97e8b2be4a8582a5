import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** An invitation to become a portal user; only the SHA-256 of its token is stored, used once. */
@Entity('merchant_user_invitations')
@Index('uq_invitations_token_hash', ['tokenHash'], { unique: true })
export class MerchantUserInvitation {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  @Column({ type: 'varchar', length: 254 })
  email: string;

  @Column({ name: 'token_hash', type: 'char', length: 64 })
  tokenHash: string;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'used_at', type: 'timestamptz', nullable: true })
  usedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
