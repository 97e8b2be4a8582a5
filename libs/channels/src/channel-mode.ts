import { CHANNEL_ADAPTERS, type ChannelAdapterName, type MerchantMode } from '@app/db';

/** A channel's mode: one rule for TypeScript and SQL, beside the channel entity (libs/db). */
export { channelMode } from '@app/db';

/** The mode a new channel gets: `requested` when given, else the adapter's own. Null when the adapter cannot have it. */
export function newChannelMode(adapter: ChannelAdapterName, requested: string | undefined): MerchantMode | null {
  if (requested === undefined) return adapter === 'sandbox' ? 'test' : 'live';
  if (requested !== 'live' && requested !== 'test') return null;
  return adapter === 'sandbox' && requested === 'live' ? null : requested;
}

/**
 * The adapters a merchant of `mode` may pay through; the sandbox's only while SANDBOX_ENABLED. A
 * test merchant may also use provider channels created in test mode: `channel:link` admits only
 * channels of the merchant's own mode, so a link to a live one never exists.
 */
export function adaptersForMode(mode: MerchantMode, sandboxEnabled: boolean): ChannelAdapterName[] {
  return CHANNEL_ADAPTERS.filter((adapter) => adapterOffered(adapter, sandboxEnabled) && (adapter !== 'sandbox' || mode === 'test'));
}

/** The one "sandbox disabled" rule: the sandbox adapter exists only while SANDBOX_ENABLED (its pages, notifications, refunds, links). */
export function adapterOffered(adapter: ChannelAdapterName, sandboxEnabled: boolean): boolean {
  return adapter !== 'sandbox' || sandboxEnabled;
}
