import { type DynamicModule, Global, Injectable, Module, type OnApplicationShutdown, Optional } from '@nestjs/common';
import { Redis } from 'ioredis';
import type { AppConfig } from './config';
import { ConnectionReport } from './connection-report';
import { createRedisClient } from './redis-connection';

/** Closes the connection when the app stops, so a test or Ctrl-C does not hang on an open socket. */
@Injectable()
class RedisCloser implements OnApplicationShutdown {
  constructor(@Optional() private readonly redis?: Redis) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.redis && this.redis.status !== 'end') await this.redis.quit().catch(() => this.redis?.disconnect());
  }
}

/**
 * One shared Redis connection, injected as the `Redis` class, when Redis is configured (REDIS_URL,
 * Sentinel or a Cluster: see redis-connection.ts, where every client is made). Without it nothing
 * is provided and the consumers (nonces, rate limits) fall back to PostgreSQL or memory.
 */
@Global()
@Module({})
export class RedisModule {
  static forRoot(config: AppConfig): DynamicModule {
    const target = config.redis;
    if (!target) return { module: RedisModule };
    return {
      module: RedisModule,
      providers: [
        {
          provide: Redis,
          // A request must fail fast (50300) rather than wait for Redis to come back. Commands
          // asked in one turn of the event loop go in one write (auto-pipelining): the worker's
          // callback attempts ask theirs in bursts (a batch of loads answers at once).
          useFactory: () => {
            const redis = createRedisClient(target, 'requests', { enableAutoPipelining: true });
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
