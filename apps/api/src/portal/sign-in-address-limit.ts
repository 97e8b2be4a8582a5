import { Injectable, Optional } from '@nestjs/common';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { AppConfig, keyspacePrefix } from '@app/common';

/**
 * SPEC 8a: sign-in attempts per client IP, whatever the email (PORTAL_SIGNIN_PER_MINUTE a
 * minute), counted before anything else is looked at, in Redis so every API instance adds to
 * one count (in memory without Redis, and while Redis does not answer). The per-email lock
 * stops guessing one password; this stops one address from guessing across many emails.
 */
@Injectable()
export class SignInAddressLimit {
  private readonly attempts: RateLimiterAbstract;

  constructor(config: AppConfig, @Optional() redis?: Redis) {
    const keyPrefix = `${keyspacePrefix(config.redis, config.queuePrefix, 'portal', `${config.queuePrefix}:`)}rl:portal-sign-in`;
    const options = { keyPrefix, points: config.portalSigninPerMinute, duration: 60 };
    const memory = new RateLimiterMemory(options);
    this.attempts = redis ? new RateLimiterRedis({ ...options, storeClient: redis, useRedisPackage: false, insuranceLimiter: memory }) : memory;
  }

  /** Counts one attempt from `ip`: 0 when it may go on, else the milliseconds until the address may try again. */
  async take(ip: string): Promise<number> {
    try {
      await this.attempts.consume(ip);
      return 0;
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return Math.max(1, rejection.msBeforeNext);
      throw rejection;
    }
  }
}
