import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '@app/common';
import { adaptersForMode } from '@app/channels';
import { type Channel, ChannelRepository, type LinkedChannel, type Merchant, NotificationListener, type NotificationListenerTimings } from '@app/db';

/** The channel the channels and merchant_channels triggers notify (migration 1764491100000). */
export const CHANNEL_LINK_CHANGED_CHANNEL = 'channel_link_changed';
/** Beyond this many (merchant, channel) pairs the oldest cached entries make room. */
export const CHANNEL_LINK_CACHE_MAX_ENTRIES = 20_000;
/** A safety net behind the notifications: no entry is trusted longer than this. */
export const CHANNEL_LINK_CACHE_MAX_AGE_MS = 60_000;

interface Entry {
  merchantId: number;
  channelId: number;
  /** null: not linked, disabled or of the other mode, as createOrder answers 40010 for. */
  linked: LinkedChannel | null;
  loadedAt: number;
}

/**
 * createOrder's channel lookup (ChannelRepository.findLinkedEnabled) cached in this API process
 * by merchant, mode and channel, and dropped when PostgreSQL announces a change to the channel
 * or the link (`channel_link_changed`, NOTIFY from triggers, delivered on commit), so a disabled
 * or unlinked channel reaches every instance within moments, as the merchant cache does for
 * merchants. The merchant's mode is part of the key: a mode change comes with a new merchant
 * row from the merchant cache, so it reads a new entry. While the listening connection is down
 * the cache is empty and bypassed: a change it could not hear about is never served stale.
 */
@Injectable()
export class ChannelLinkCache implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(ChannelLinkCache.name);
  private readonly entries = new Map<string, Entry>();
  /** Channel rows by id (the notification route's lookup), dropped by any change announced for the channel. */
  private readonly channelRows = new Map<number, { channel: Channel; loadedAt: number }>();
  /** Bumped by every notification and listener state change: a lookup that overlapped one does not store its row. */
  private generation = 0;
  private listener: NotificationListener | null = null;
  /** Writable before start so a test can shorten the reconnect and check intervals. */
  listenerTimings: Partial<NotificationListenerTimings> = {};

  constructor(
    private readonly config: AppConfig,
    private readonly channels: ChannelRepository,
  ) {}

  async onModuleInit(): Promise<void> {
    const listener = new NotificationListener(
      this.config.databaseUrl,
      CHANNEL_LINK_CHANGED_CHANNEL,
      {
        notification: (payload) => this.changed(payload),
        listening: () => this.forgetAll(),
        lost: (reason) => {
          this.forgetAll();
          this.logger.warn(`channel link cache bypassed until the ${CHANNEL_LINK_CHANGED_CHANNEL} listener reconnects: ${reason.message}`);
        },
      },
      this.listenerTimings,
    );
    this.listener = listener;
    await listener.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.listener?.stop();
  }

  /** True while changes are being heard, so cached links are trusted. */
  get listening(): boolean {
    return this.listener?.listening ?? false;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The channel when it is linked to the merchant, enabled and of the merchant's mode, with the rate that applies; else null. */
  async find(merchant: Pick<Merchant, 'id' | 'mode'>, channelId: number): Promise<LinkedChannel | null> {
    const key = `${merchant.id}:${merchant.mode}:${channelId}`;
    const cached = this.entries.get(key);
    if (cached && this.listening && Date.now() - cached.loadedAt < CHANNEL_LINK_CACHE_MAX_AGE_MS) return cached.linked;
    const generation = this.generation;
    // SPEC 5: a channel of the other mode is not there for this merchant, whatever links exist.
    const linked = await this.channels.findLinkedEnabled(merchant.id, channelId, adaptersForMode(merchant.mode, this.config.sandboxEnabled));
    if (this.listening && generation === this.generation) this.store(key, { merchantId: merchant.id, channelId, linked, loadedAt: Date.now() });
    return linked;
  }

  /**
   * The channel row by id, as ChannelRepository.findById reads it, from this process's copy while
   * changes are heard. A missing channel is not kept: a new channel row is not announced.
   */
  async findChannel(channelId: number): Promise<Channel | null> {
    const cached = this.channelRows.get(channelId);
    if (cached && this.listening && Date.now() - cached.loadedAt < CHANNEL_LINK_CACHE_MAX_AGE_MS) return cached.channel;
    const generation = this.generation;
    const channel = await this.channels.findById(channelId);
    if (channel && this.listening && generation === this.generation) {
      this.channelRows.delete(channelId);
      if (this.channelRows.size >= CHANNEL_LINK_CACHE_MAX_ENTRIES) {
        const oldest = this.channelRows.keys().next().value;
        if (oldest !== undefined) this.channelRows.delete(oldest);
      }
      this.channelRows.set(channelId, { channel, loadedAt: Date.now() });
    }
    return channel;
  }

  private store(key: string, entry: Entry): void {
    this.entries.delete(key);
    if (this.entries.size >= CHANNEL_LINK_CACHE_MAX_ENTRIES) {
      // Insertion order: the first key is the oldest entry.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, entry);
  }

  private changed(payload: string): void {
    this.generation++;
    let change: { merchant_id?: unknown; channel_id?: unknown };
    try {
      change = JSON.parse(payload) as { merchant_id?: unknown; channel_id?: unknown };
    } catch {
      this.forgetAll();
      return;
    }
    if (typeof change.channel_id !== 'number') return this.forgetAll();
    const merchantId = typeof change.merchant_id === 'number' ? change.merchant_id : null;
    if (merchantId === null) this.channelRows.delete(change.channel_id);
    for (const [key, entry] of this.entries) {
      if (entry.channelId === change.channel_id && (merchantId === null || entry.merchantId === merchantId)) this.entries.delete(key);
    }
  }

  private forgetAll(): void {
    this.generation++;
    this.entries.clear();
    this.channelRows.clear();
  }
}
