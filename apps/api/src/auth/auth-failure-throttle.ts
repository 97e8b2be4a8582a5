import { Injectable, Optional } from '@nestjs/common';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { AppConfig, DomainError, ErrorCode, apiMessage, keyspacePrefix } from '@app/common';
import { ADMISSION_KEYSPACE } from '@app/db';

/**
 * The refusals a guesser collects: malformed, unknown key, bad signature, stale timestamp,
 * replayed nonce. Not 40300: a disabled merchant's own server sends its real key, it is not guessing.
 */
export const AUTH_FAILURE_CODES: ReadonlySet<ErrorCode> = new Set([
  ErrorCode.AuthMissing,
  ErrorCode.AuthUnknownKey,
  ErrorCode.AuthBadSignature,
  ErrorCode.AuthTimestamp,
  ErrorCode.AuthNonceUsed,
]);

/** Why a blocked address is refused: its own failures, not traffic, so the fix is in its signing code. */
export function addressBlocked(msBeforeNext: number): DomainError {
  return DomainError.rateLimited(msBeforeNext, apiMessage('auth.addressBlocked'));
}

/** Expired blocks are forgotten once this many addresses are remembered. */
const PRUNE_AT = 10_000;

/**
 * Failed authentications per client IP (SPEC 3, RATE_LIMIT_AUTH_FAIL_PER_SECOND): a bucket
 * of twice the rate, refilled every 2 s, counted in Redis so every API instance adds to one
 * count (in memory without Redis, the embedded mode's one process).
 *
 * Only a failure writes to Redis. Its answer says when the bucket is empty, and the instance
 * then keeps "blocked until" for that address locally, checked before any other work, so a
 * blocked guess costs a Map lookup instead of a merchant lookup, a decrypt and an HMAC. Another
 * instance learns of the block from its admission script (SignedRequestAdmission), which reads
 * the count under `redisKey` in the round trip a verified request makes anyway.
 */
@Injectable()
export class AuthFailureThrottle {
  private readonly failures: RateLimiterAbstract;
  private readonly blockedUntil = new Map<string, number>();
  /** Failures within the window that block the address: the burst, twice the rate. */
  readonly blockingFailures: number;

  constructor(config: AppConfig, @Optional() redis?: Redis) {
    // Under QUEUE_PREFIX: deployments (and test runs) sharing one Redis count their addresses apart.
    // On a Cluster in the admission keyspace's slot: the admission script reads this count with the nonce and bucket keys.
    const keyPrefix = `${keyspacePrefix(config.redis, config.queuePrefix, ADMISSION_KEYSPACE, `${config.queuePrefix}:`)}rl:auth-fail`;
    const points = 2 * config.rateLimitAuthFailPerSecond;
    this.blockingFailures = points;
    this.failures = redis
      ? new RateLimiterRedis({ storeClient: redis, useRedisPackage: false, keyPrefix, points, duration: 2 })
      : new RateLimiterMemory({ keyPrefix, points, duration: 2 });
  }

  /** Where Redis holds the address's failure count in the current window (rate-limiter-flexible's `prefix:key`, an integer with a TTL). */
  redisKey(ip: string): string {
    return this.failures.getKey(ip);
  }

  /** 42900 with Retry-After while this instance knows the address is blocked. */
  refuseIfBlocked(ip: string): void {
    const until = this.blockedUntil.get(ip);
    if (until === undefined) return;
    const left = until - Date.now();
    if (left > 0) throw addressBlocked(left);
    this.blockedUntil.delete(ip);
  }

  /** Counts the failure; returns what to answer: the failure itself, or 42900 once the address is past its burst. */
  async recordFailure(ip: string, failure: DomainError): Promise<DomainError> {
    try {
      const counted = await this.failures.consume(ip);
      if (counted.remainingPoints === 0) this.block(ip, counted.msBeforeNext);
      return failure;
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      this.block(ip, rejection.msBeforeNext);
      return addressBlocked(rejection.msBeforeNext);
    }
  }

  /** Remembers locally that the address is blocked for `ms` more. */
  block(ip: string, ms: number): void {
    if (this.blockedUntil.size >= PRUNE_AT) {
      const now = Date.now();
      for (const [address, until] of this.blockedUntil) if (until <= now) this.blockedUntil.delete(address);
    }
    this.blockedUntil.set(ip, Date.now() + ms);
  }
}
