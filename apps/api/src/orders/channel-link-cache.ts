import { Injectable } from '@nestjs/common';
import { AppConfig } from '@app/common';
import { adaptersForMode } from '@app/channels';
import { type Channel, ChannelRepository, type LinkedChannel, type Merchant, NotifiedCacheProvider } from '@app/db';

/** The channel the channels and merchant_channels triggers notify (migration 1764491100000). */
export const CHANNEL_LINK_CHANGED_CHANNEL = 'channel_link_changed';
/** Beyond this many (merchant, channel) pairs the oldest cached entries make room. */
export const CHANNEL_LINK_CACHE_MAX_ENTRIES = 20_000;
/** A safety net behind the notifications: no entry is trusted longer than this. */
export const CHANNEL_LINK_CACHE_MAX_AGE_MS = 60_000;

/** A merchant's link to a channel (createOrder), or a channel row by id (the notification route). */
type Entry =
  | {
      kind: 'link';
      merchantId: number;
      channelId: number;
      /** null: not linked, disabled or of the other mode, as createOrder answers 40010 for. */
      linked: LinkedChannel | null;
    }
  | { kind: 'channel'; channelId: number; channel: Channel | null };

/**
 * createOrder's channel lookup (ChannelRepository.findLinkedEnabled) cached in this API process
 * by merchant, mode and channel, and dropped when PostgreSQL announces a change to the channel
 * or the link (`channel_link_changed`, from triggers), as the merchant cache does for merchants.
 * The merchant's mode is part of the key: a mode change comes with a new merchant row from the
 * merchant cache, so it reads a new entry.
 */
@Injectable()
export class ChannelLinkCache extends NotifiedCacheProvider<Entry> {
  constructor(
    private readonly config: AppConfig,
    private readonly channels: ChannelRepository,
  ) {
    super({
      databaseUrl: config.databaseDirectUrl,
      channel: CHANNEL_LINK_CHANGED_CHANNEL,
      maxEntries: CHANNEL_LINK_CACHE_MAX_ENTRIES,
      maxAgeMs: CHANNEL_LINK_CACHE_MAX_AGE_MS,
      name: ChannelLinkCache.name,
    });
  }

  /** The channel when it is linked to the merchant, enabled and of the merchant's mode, with the rate that applies; else null. */
  async find(merchant: Pick<Merchant, 'id' | 'mode'>, channelId: number): Promise<LinkedChannel | null> {
    const entry = await this.cache.get(`${merchant.id}:${merchant.mode}:${channelId}`, async (): Promise<Entry> => ({
      kind: 'link',
      merchantId: merchant.id,
      channelId,
      // SPEC 5: a channel of the other mode is not there for this merchant, whatever links exist.
      linked: await this.channels.findLinkedEnabled(merchant.id, channelId, adaptersForMode(merchant.mode, this.config.sandboxEnabled)),
    }));
    return entry.kind === 'link' ? entry.linked : null;
  }

  /**
   * The channel row by id, as ChannelRepository.findById reads it, from this process's copy while
   * changes are heard. A missing channel is not kept: a new channel row is not announced.
   */
  async findChannel(channelId: number): Promise<Channel | null> {
    const entry = await this.cache.get(
      `channel:${channelId}`,
      async (): Promise<Entry> => ({ kind: 'channel', channelId, channel: await this.channels.findById(channelId) }),
      (e) => e.kind === 'channel' && e.channel !== null,
    );
    return entry.kind === 'channel' ? entry.channel : null;
  }

  /** `{channel_id, merchant_id?}`: that channel's row and links (only that merchant's link, when named); anything else empties the cache. */
  protected changed(payload: string): void {
    let change: { merchant_id?: unknown; channel_id?: unknown };
    try {
      change = JSON.parse(payload) as { merchant_id?: unknown; channel_id?: unknown };
    } catch {
      return this.cache.forgetAll();
    }
    const { channel_id: channelId } = change;
    if (typeof channelId !== 'number') return this.cache.forgetAll();
    const merchantId = typeof change.merchant_id === 'number' ? change.merchant_id : null;
    this.cache.forgetWhere((entry) => entry.channelId === channelId && (merchantId === null || (entry.kind === 'link' && entry.merchantId === merchantId)));
  }
}
