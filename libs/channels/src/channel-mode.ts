import { CHANNEL_ADAPTERS, type ChannelAdapterName, type MerchantMode } from '@app/db';

/** SPEC 5: a channel's mode follows its adapter: the sandbox moves test money, every other adapter real money. */
export function channelMode(adapter: ChannelAdapterName): MerchantMode {
  return adapter === 'sandbox' ? 'test' : 'live';
}

/** The adapters a merchant of `mode` may pay through; the sandbox's only while SANDBOX_ENABLED. */
export function adaptersForMode(mode: MerchantMode, sandboxEnabled: boolean): ChannelAdapterName[] {
  return CHANNEL_ADAPTERS.filter((adapter) => channelMode(adapter) === mode && (adapter !== 'sandbox' || sandboxEnabled));
}
