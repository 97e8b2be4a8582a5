import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { NotificationListener, type NotificationListenerTimings } from './notification-listener';

export interface NotifiedCacheOptions {
  /** Where the NOTIFY comes from. */
  databaseUrl: string;
  /** The channel the table's trigger notifies. */
  channel: string;
  /** Beyond this many entries the oldest make room. */
  maxEntries: number;
  /** A safety net behind the notifications: no entry is trusted longer than this. */
  maxAgeMs: number;
  /** What a notification's payload drops: the cache calls it with itself, after making any lookup in flight not store its answer. */
  changed: (payload: string) => void;
  /** Whose cache it is, in the line logged when the listener is lost. */
  logger: Logger;
}

/**
 * Values cached in this process and dropped when PostgreSQL announces a change (NOTIFY from a
 * trigger, delivered on commit), so a change reaches every instance within moments. While the
 * listening connection is down the cache is empty and bypassed: a change it could not hear about
 * is never served stale. A lookup that overlapped a notification does not store its answer.
 */
export class NotifiedCache<V> {
  private readonly entries = new Map<string, { value: V; loadedAt: number }>();
  /** Bumped by every notification and listener state change. */
  private generation = 0;
  private listener: NotificationListener | null = null;

  constructor(private readonly options: NotifiedCacheOptions) {}

  async start(timings: Partial<NotificationListenerTimings> = {}): Promise<void> {
    const { channel, logger } = this.options;
    this.listener = new NotificationListener(
      this.options.databaseUrl,
      channel,
      {
        notification: (payload) => {
          this.generation++;
          this.options.changed(payload);
        },
        listening: () => this.forgetAll(),
        lost: (reason) => {
          this.forgetAll();
          logger.warn({ channel, err: reason.message }, 'cache bypassed until its listener reconnects');
        },
      },
      timings,
    );
    await this.listener.start();
  }

  async stop(): Promise<void> {
    await this.listener?.stop();
  }

  /** True while changes are being heard, so cached values are trusted. */
  get listening(): boolean {
    return this.listener?.listening ?? false;
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * The cached value under `key` when it is fresh and changes are being heard; else `load`'s,
   * stored unless `keep` refuses it or a change arrived while it loaded.
   */
  async get(key: string, load: () => Promise<V>, keep: (value: V) => boolean = () => true): Promise<V> {
    const cached = this.entries.get(key);
    if (cached && this.listening && Date.now() - cached.loadedAt < this.options.maxAgeMs) return cached.value;
    const generation = this.generation;
    const value = await load();
    if (!keep(value)) this.entries.delete(key);
    else if (this.listening && generation === this.generation) this.store(key, value);
    return value;
  }

  forget(key: string): void {
    this.entries.delete(key);
  }

  forgetWhere(matches: (value: V) => boolean): void {
    for (const [key, entry] of this.entries) if (matches(entry.value)) this.entries.delete(key);
  }

  forgetAll(): void {
    this.generation++;
    this.entries.clear();
  }

  private store(key: string, value: V): void {
    this.entries.delete(key);
    if (this.entries.size >= this.options.maxEntries) {
      // Insertion order: the first key is the oldest entry.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { value, loadedAt: Date.now() });
  }
}

/** A provider around one NotifiedCache: listening from module init, stopped at shutdown. */
export abstract class NotifiedCacheProvider<V> implements OnModuleInit, OnApplicationShutdown {
  protected readonly cache: NotifiedCache<V>;
  /** Writable before start so a test can shorten the reconnect and check intervals. */
  listenerTimings: Partial<NotificationListenerTimings> = {};

  protected constructor(options: Omit<NotifiedCacheOptions, 'changed' | 'logger'> & { name: string }) {
    this.cache = new NotifiedCache<V>({ ...options, changed: (payload) => this.changed(payload), logger: new Logger(options.name) });
  }

  /** What one notification's payload drops. */
  protected abstract changed(payload: string): void;

  async onModuleInit(): Promise<void> {
    await this.cache.start(this.listenerTimings);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.cache.stop();
  }

  /** True while changes are being heard, so cached values are trusted. */
  get listening(): boolean {
    return this.cache.listening;
  }

  get size(): number {
    return this.cache.size;
  }
}
