import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { ChannelTalkColumns } from './channel-talk.columns';

/**
 * The payee of a sell order and the state of its call to the channel. Kept beside the order, so
 * the orders table stays as narrow as createOrder's hot path wants it.
 */
@Entity('payouts')
@Index('ix_payouts_open', ['attemptedAt'], { where: '"settled_at" IS NULL' })
export class Payout extends ChannelTalkColumns {
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

  @Column({ name: 'attempted_at', type: 'timestamptz' })
  attemptedAt: Date;

  /** When the sell order reached completed or cancelled: the sweep looks only at open payouts. */
  @Column({ name: 'settled_at', type: 'timestamptz', nullable: true })
  settledAt: Date | null;
}
