import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/** A channel linked to a merchant, with the merchant's own rate when it has one. */
@Entity('merchant_channels')
@Index('ix_merchant_channels_channel', ['channelId'])
export class MerchantChannel {
  @PrimaryColumn({ name: 'merchant_id', type: 'integer' })
  merchantId: number;

  @PrimaryColumn({ name: 'channel_id', type: 'integer' })
  channelId: number;

  /** null: the channel's default rate applies. */
  @Column({ type: 'numeric', precision: 10, scale: 8, nullable: true })
  rate: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
