import { BullModule } from '@nestjs/bullmq';
import { type DynamicModule, Global, Module } from '@nestjs/common';
import { createPostgresBackend, setDefaultBackendFactory } from 'bullmq';
import { type AppConfig, QUEUE } from '@app/common';
import { JobQueue } from './job-queue';

/**
 * BullMQ with both queues registered and the JobQueue producer. With REDIS_URL it runs on
 * Redis; without it (the embedded mode) on BullMQ's PostgreSQL backend, in the `bullmq`
 * schema of the service's own database.
 */
@Global()
@Module({})
export class QueueModule {
  static forRoot(config: AppConfig): DynamicModule {
    let connection: Record<string, unknown>;
    if (config.redisUrl) {
      // Workers block on Redis: BullMQ wants unlimited retries per request on their connections.
      connection = { url: config.redisUrl, maxRetriesPerRequest: null };
    } else {
      // Must happen before any Queue or Worker is constructed, which is later, when Nest builds the providers.
      setDefaultBackendFactory(createPostgresBackend);
      connection = { connectionString: config.databaseUrl, migrate: true, max: 5 };
    }
    return {
      module: QueueModule,
      imports: [BullModule.forRoot({ prefix: config.queuePrefix, connection }), BullModule.registerQueue({ name: QUEUE.orders }, { name: QUEUE.callbacks })],
      providers: [JobQueue],
      exports: [JobQueue, BullModule],
    };
  }
}
