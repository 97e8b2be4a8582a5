import { Injectable, Optional } from '@nestjs/common';
import { Redis } from 'ioredis';
import { BurstyRateLimiter, RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { AppConfig, DomainError } from '@app/common';

/**
 * Per api_key: a steady rate per second plus a burst allowance (SPEC 8), in Redis so every API
 * instance shares one budget. Without Redis (the embedded mode, one process) it is in memory.
 */
@Injectable()
export class MerchantRateLimiter {
  private readonly limiter: BurstyRateLimiter;

  constructor(config: AppConfig, @Optional() redis?: Redis) {
    const make = (keyPrefix: string, points: number, duration: number): RateLimiterAbstract =>
      redis
        ? new RateLimiterRedis({ storeClient: redis, keyPrefix, points, duration, useRedisPackage: false })
        : new RateLimiterMemory({ keyPrefix, points, duration });
    const perSecond = config.rateLimitMerchantPerSecond;
    const burst = Math.max(config.rateLimitMerchantBurst - perSecond, 1);
    // The steady limit refills every second; the burst bucket lends up to `burst` more over the window it takes to earn them back.
    const burstWindow = Math.max(1, Math.ceil(burst / perSecond));
    this.limiter = new BurstyRateLimiter(make('rl:merchant', perSecond, 1), make('rl:merchant-burst', burst, burstWindow));
  }

  async consume(apiKey: string): Promise<void> {
    try {
      await this.limiter.consume(apiKey);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        throw DomainError.rateLimited(rejection.msBeforeNext);
      }
      throw rejection;
    }
  }
}
