import { Injectable, Logger, Optional } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import { AppConfig, keyspacePrefix } from '@app/common';

/**
 * Beyond twice the tolerance: timestamps are compared in whole seconds (up to 1 s more of
 * acceptance), TTLs are rounded, and API instances' clocks differ a little (SPEC 3: at least 5 s).
 */
export const NONCE_MARGIN_SECONDS = 5;

/** The keyspace of what the API's admission script touches in one call: nonces, the api_key buckets, the failed-auth counts (one hash tag on a Cluster). */
export const ADMISSION_KEYSPACE = 'admission';

/**
 * The nonce claim in Redis (SET NX EX), as a Lua expression true when claimed: the API's admission
 * script claims with it, NonceStore.claim with the same command, key and TTL.
 */
export function claimNonceLua(key: string, ttlSeconds: string): string {
  return `redis.call('SET', ${key}, '1', 'EX', ${ttlSeconds}, 'NX')`;
}

/**
 * Used nonces, shared by every API instance: Redis `SET NX EX` when there is Redis, else a
 * table whose primary key does the same (the embedded mode). A timestamp first used at the
 * window's future edge stays accepted for twice the tolerance, so its nonce is kept that long
 * plus a margin, and cannot come back while the timestamp is still accepted.
 */
@Injectable()
export class NonceStore {
  private readonly logger = new Logger(NonceStore.name);
  /** How long a used nonce is kept; the API's admission script claims nonces with the same key and TTL. */
  readonly ttlSeconds: number;
  /** Nothing before `nonce:` on one server or Sentinel (as always); on a Cluster the admission keyspace's hash tag, which the admission script's other keys share. */
  private readonly keyPrefix: string;
  private lastPrune = 0;

  constructor(
    config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    @Optional() private readonly redis?: Redis,
  ) {
    this.ttlSeconds = config.authToleranceSeconds * 2 + NONCE_MARGIN_SECONDS;
    this.keyPrefix = keyspacePrefix(config.redis, config.queuePrefix, ADMISSION_KEYSPACE, '');
  }

  redisKey(apiKey: string, nonce: string): string {
    return `${this.keyPrefix}nonce:${apiKey}:${nonce}`;
  }

  /** Records the nonce; false when this api_key has used it already. Atomic across instances. */
  async claim(apiKey: string, nonce: string): Promise<boolean> {
    if (this.redis) {
      const result = await this.redis.set(this.redisKey(apiKey, nonce), '1', 'EX', this.ttlSeconds, 'NX');
      return result === 'OK';
    }
    this.pruneNow();
    const rows: unknown[] = await this.dataSource.query(
      `INSERT INTO nonces (api_key, nonce, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
       ON CONFLICT (api_key, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE nonces.expires_at < now()
       RETURNING 1`,
      [apiKey, nonce, this.ttlSeconds],
    );
    return rows.length === 1;
  }

  /** Expired rows go at most once a minute, off the request's path. */
  private pruneNow(): void {
    if (Date.now() - this.lastPrune < 60_000) return;
    this.lastPrune = Date.now();
    this.dataSource
      .query('DELETE FROM nonces WHERE expires_at < now()')
      .catch((err: Error) => this.logger.warn(`pruning expired nonces failed, the next prune retries: ${err.message}`));
  }
}
