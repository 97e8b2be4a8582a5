import { Injectable } from '@nestjs/common';
import { AppConfig, SecretBox, merchantSecretContext, previousMerchantSecretContext } from '@app/common';
import { type Merchant, MerchantRepository, NotifiedCacheProvider } from '@app/db';

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
 * rotation reaches every instance within moments; bypassed while that listener is down.
 */
@Injectable()
export class MerchantCredentialsCache extends NotifiedCacheProvider<MerchantCredentials | null> {
  constructor(
    config: AppConfig,
    private readonly merchants: MerchantRepository,
    private readonly secretBox: SecretBox,
  ) {
    super({
      databaseUrl: config.databaseDirectUrl,
      channel: MERCHANT_CHANGED_CHANNEL,
      maxEntries: MERCHANT_CACHE_MAX_ENTRIES,
      maxAgeMs: MERCHANT_CACHE_MAX_AGE_MS,
      name: MerchantCredentialsCache.name,
    });
  }

  /** The merchant with that api_key and its secrets, null when there is none (an unknown key is not cached). */
  async find(apiKey: string): Promise<MerchantCredentials | null> {
    return this.cache.get(
      apiKey,
      async () => {
        const merchant = await this.merchants.findByApiKey(apiKey);
        return merchant ? new MerchantCredentials(merchant, (m) => merchantSecrets(this.secretBox, m)) : null;
      },
      (credentials) => credentials !== null,
    );
  }

  /** `{id, api_key}`: that merchant's entry, whatever key it is under; anything else empties the cache. */
  protected changed(payload: string): void {
    let change: { id?: unknown; api_key?: unknown };
    try {
      change = JSON.parse(payload) as { id?: unknown; api_key?: unknown };
    } catch {
      return this.cache.forgetAll();
    }
    if (typeof change.api_key === 'string') this.cache.forget(change.api_key);
    this.cache.forgetWhere((entry) => entry?.merchant.id === change.id);
  }
}
