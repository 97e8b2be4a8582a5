import { type DynamicModule, Global, Injectable, Module, type OnApplicationShutdown, Optional } from '@nestjs/common';
import { Redis } from 'ioredis';
import type { AppConfig } from './config';
import { ConnectionReport } from './connection-report';

/** Closes the connection when the app stops, so a test or Ctrl-C does not hang on an open socket. */
@Injectable()
class RedisCloser implements OnApplicationShutdown {
  constructor(@Optional() private readonly redis?: Redis) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.redis && this.redis.status !== 'end') await this.redis.quit().catch(() => this.redis?.disconnect());
  }
}

/**
 * One shared Redis connection, injected as the `Redis` class, when REDIS_URL is set. Without
 * it nothing is provided and the consumers (nonces, rate limits) fall back to PostgreSQL or memory.
 */
@Global()
@Module({})
export class RedisModule {
  static forRoot(config: AppConfig): DynamicModule {
    if (!config.redisUrl) return { module: RedisModule };
    const url = config.redisUrl;
    return {
      module: RedisModule,
      providers: [
        {
          provide: Redis,
          // A request must fail fast (50300) rather than wait for Redis to come back. Commands
          // asked in one turn of the event loop go in one write (auto-pipelining): the worker's
          // callback attempts ask theirs in bursts (a batch of loads answers at once).
          useFactory: () => {
            const redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false, enableAutoPipelining: true });
            new ConnectionReport('Redis').watch(redis);
            return redis;
          },
        },
        RedisCloser,
      ],
      exports: [Redis],
    };
  }
}
