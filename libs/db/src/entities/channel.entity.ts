import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import type { MerchantMode } from './merchant.entity';
import { bigintNumber } from './transformers';

export const CHANNEL_CATEGORIES = ['processor', 'remotepay', 'warehouse'] as const;
export type ChannelCategory = (typeof CHANNEL_CATEGORIES)[number];
export const PAY_METHODS = ['wxpay', 'alipay', 'bank'] as const;
export type PayMethod = (typeof PAY_METHODS)[number];
export const CHANNEL_ADAPTERS = ['sandbox', 'epay', 'alipay', 'wechatpay'] as const;
export type ChannelAdapterName = (typeof CHANNEL_ADAPTERS)[number];

/** The adapter that moves test money whatever its row says (SPEC 6). */
const ALWAYS_TEST: ChannelAdapterName = 'sandbox';

/**
 * SPEC 6: a channel moves test or live money. The sandbox always test money; the other adapters
 * live money unless the channel was created with `--mode test` (pointed at a provider's sandbox).
 * channelModeSql is the same rule for a query; they live together so they cannot drift.
 */
export function channelMode(channel: { adapter: ChannelAdapterName; mode: MerchantMode }): MerchantMode {
  return channel.adapter === ALWAYS_TEST ? 'test' : channel.mode;
}

/** channelMode of the channels row aliased `c`, in SQL. */
export function channelModeSql(c: string): string {
  return `(CASE WHEN ${c}.adapter = '${ALWAYS_TEST}' THEN 'test' ELSE ${c}.mode END)`;
}

@Entity('channels')
export class Channel {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ type: 'varchar', length: 16 })
  category: ChannelCategory;

  @Column({ type: 'varchar', length: 128 })
  name: string;

  /** Comma list in display order, e.g. "alipay,wxpay". */
  @Column({ name: 'pay_method', type: 'varchar', length: 64 })
  payMethod: string;

  @Column({ type: 'varchar', length: 32 })
  adapter: ChannelAdapterName;

  /** Test money or live money (SPEC 6): `sandbox` is always test; the others live unless created with `--mode test`. */
  @Column({ type: 'varchar', length: 4, default: 'live' })
  mode: MerchantMode;

  /** The sensitive config (merchant_no, secret_key, proxy_url, gateway_url), sealed with SecretBox. */
  @Column({ name: 'config_enc', type: 'text' })
  configEnc: string;

  @Column({ name: 'min_fen', type: 'bigint', default: 1, transformer: bigintNumber })
  minFen: number;

  @Column({ name: 'max_fen', type: 'bigint', default: 100000000, transformer: bigintNumber })
  maxFen: number;

  @Column({ name: 'default_rate', type: 'numeric', precision: 10, scale: 8, default: '0' })
  defaultRate: string;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
