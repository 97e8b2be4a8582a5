import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { AppConfig, SecretBox, merchantSecretContext, previousMerchantSecretContext } from '@app/common';
import { type Merchant, MerchantRepository, NotificationListener, type NotificationListenerTimings } from '@app/db';

/** The channel the merchants trigger notifies (migration 1764150000000). */
export const MERCHANT_CHANGED_CHANNEL = 'merchant_changed';
/** Beyond this many merchants the oldest cached entries make room. */
export const MERCHANT_CACHE_MAX_ENTRIES = 10_000;
/** A safety net behind the notifications: no entry is trusted longer than this. */
export const MERCHANT_CACHE_MAX_AGE_MS = 60_000;

/** A secret a request may be signed with, until `untilMs` (null: while it is the current one). */
export interface VerifyingSecret {
  secret: string;
  untilMs: number | null;
}

/**
 * The merchant's current secret, then the previous one while its rotation grace lasts (SPEC 3).
 * The expiry is kept, not judged here: a cached copy stops using the previous secret on time.
 */
export function merchantSecrets(
  secretBox: SecretBox,
  merchant: Pick<Merchant, 'apiKey' | 'apiSecretEnc' | 'apiSecretPreviousEnc' | 'apiSecretPreviousUntil'>,
): readonly VerifyingSecret[] {
  const secrets: VerifyingSecret[] = [{ secret: secretBox.open(merchant.apiSecretEnc, merchantSecretContext(merchant.apiKey)), untilMs: null }];
  if (merchant.apiSecretPreviousEnc && merchant.apiSecretPreviousUntil && merchant.apiSecretPreviousUntil.getTime() > Date.now()) {
    secrets.push({
      secret: secretBox.open(merchant.apiSecretPreviousEnc, previousMerchantSecretContext(merchant.apiKey)),
      untilMs: merchant.apiSecretPreviousUntil.getTime(),
    });
  }
  return secrets;
}

/** A merchant row and the secrets that verify its requests, opened once per cached copy. */
export class MerchantCredentials {
  private opened: readonly VerifyingSecret[] | null = null;

  constructor(
    readonly merchant: Merchant,
    readonly loadedAt: number,
    private readonly open: (merchant: Merchant) => readonly VerifyingSecret[],
  ) {}

  /** Current first. Opened on first use: a disabled merchant's request never needs them. */
  secrets(): readonly VerifyingSecret[] {
    this.opened ??= this.open(this.merchant);
    return this.opened;
  }
}

/**
 * Merchants by api_key, cached in this API process and dropped when PostgreSQL announces a
 * change (`merchant_changed`, NOTIFY from a trigger, delivered on commit), so a disable or a
 * rotation reaches every instance within moments. While the listening connection is down the
 * cache is empty and bypassed: a change it could not hear about is never served stale.
 */
@Injectable()
export class MerchantCredentialsCache implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(MerchantCredentialsCache.name);
  private readonly entries = new Map<string, MerchantCredentials>();
  /** Bumped by every notification and listener state change: a lookup that overlapped one does not store its row. */
  private generation = 0;
  private listener: NotificationListener | null = null;
  /** Writable before start so a test can shorten the reconnect and check intervals. */
  listenerTimings: Partial<NotificationListenerTimings> = {};

  constructor(
    private readonly config: AppConfig,
    private readonly merchants: MerchantRepository,
    private readonly secretBox: SecretBox,
  ) {}

  async onModuleInit(): Promise<void> {
    const listener = new NotificationListener(
      this.config.databaseUrl,
      MERCHANT_CHANGED_CHANNEL,
      {
        notification: (payload) => this.changed(payload),
        listening: () => this.forgetAll(),
        lost: (reason) => {
          this.forgetAll();
          this.logger.warn(`merchant cache bypassed until the ${MERCHANT_CHANGED_CHANNEL} listener reconnects: ${reason.message}`);
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

  /** True while changes are being heard, so cached rows are trusted. */
  get listening(): boolean {
    return this.listener?.listening ?? false;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The merchant with that api_key and its secrets, null when there is none. */
  async find(apiKey: string): Promise<MerchantCredentials | null> {
    const cached = this.entries.get(apiKey);
    if (cached && Date.now() - cached.loadedAt < MERCHANT_CACHE_MAX_AGE_MS) return cached;
    const generation = this.generation;
    const merchant = await this.merchants.findByApiKey(apiKey);
    if (!merchant) {
      this.entries.delete(apiKey);
      return null;
    }
    const credentials = new MerchantCredentials(merchant, Date.now(), (m) => this.openSecrets(m));
    if (this.listening && generation === this.generation) this.store(apiKey, credentials);
    return credentials;
  }

  private openSecrets(merchant: Merchant): readonly VerifyingSecret[] {
    return merchantSecrets(this.secretBox, merchant);
  }

  private store(apiKey: string, credentials: MerchantCredentials): void {
    this.entries.delete(apiKey);
    if (this.entries.size >= MERCHANT_CACHE_MAX_ENTRIES) {
      // Insertion order: the first key is the oldest entry.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(apiKey, credentials);
  }

  private changed(payload: string): void {
    this.generation++;
    let change: { id?: unknown; api_key?: unknown };
    try {
      change = JSON.parse(payload) as { id?: unknown; api_key?: unknown };
    } catch {
      this.forgetAll();
      return;
    }
    if (typeof change.api_key === 'string') this.entries.delete(change.api_key);
    // Also by id, whatever key the entry is under.
    for (const [apiKey, entry] of this.entries) if (entry.merchant.id === change.id) this.entries.delete(apiKey);
  }

  private forgetAll(): void {
    this.generation++;
    this.entries.clear();
  }
}
