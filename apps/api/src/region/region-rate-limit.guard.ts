import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { AppConfig, DomainError } from '@app/common';

/**
 * Per client IP on the region routes (SPEC 8, RATE_LIMIT_IP_PER_SECOND). In memory, per instance:
 * the answers are cheap bytes, so the limit guards each process rather than a shared budget.
 */
@Injectable()
export class RegionRateLimitGuard implements CanActivate {
  private readonly limiter: RateLimiterMemory;

  constructor(config: AppConfig) {
    this.limiter = new RateLimiterMemory({ keyPrefix: 'rl:region-ip', points: config.rateLimitIpPerSecond, duration: 1 });
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    try {
      await this.limiter.consume(request.ip);
      return true;
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      throw DomainError.rateLimited(rejection.msBeforeNext);
    }
  }
}
