import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * The payee of a sell order and the state of its call to the channel. Kept beside the order, so
 * the orders table stays as narrow as createOrder's hot path wants it.
 */
@Entity('payouts')
@Index('ix_payouts_open', ['attemptedAt'], { where: '"settled_at" IS NULL' })
export class Payout {
  @PrimaryColumn({ name: 'order_id', type: 'bigint' })
  orderId: string;

  @Column({ name: 'payee_name', type: 'varchar', length: 64 })
  payeeName: string;

  /** The bank card number, sealed with SecretBox under a context naming the order. */
  @Column({ name: 'payee_account_enc', type: 'text' })
  payeeAccountEnc: string;

  /** 6222********1234: the only form in which the account is ever shown or logged. */
  @Column({ name: 'payee_account_masked', type: 'varchar', length: 32 })
  payeeAccountMasked: string;

  @Column({ name: 'payee_bank', type: 'varchar', length: 64 })
  payeeBank: string;

  @Column({ name: 'channel_payout_no', type: 'varchar', length: 128, nullable: true })
  channelPayoutNo: string | null;

  @Column({ type: 'varchar', length: 256, nullable: true })
  failure: string | null;

  /** Set before the channel is first asked: a later attempt queries before it asks again. */
  @Column({ name: 'channel_requested_at', type: 'timestamptz', nullable: true })
  channelRequestedAt: Date | null;

  @Column({ name: 'lease_until', type: 'timestamptz', nullable: true })
  leaseUntil: Date | null;

  /** Who holds the lease: only its holder's release clears it (issue 24). */
  @Column({ name: 'lease_token', type: 'uuid', nullable: true })
  leaseToken: string | null;

  @Column({ name: 'attempted_at', type: 'timestamptz' })
  attemptedAt: Date;

  /** When the sell order reached completed or cancelled: the sweep looks only at open payouts. */
  @Column({ name: 'settled_at', type: 'timestamptz', nullable: true })
  settledAt: Date | null;
}
