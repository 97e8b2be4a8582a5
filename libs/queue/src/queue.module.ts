import { BullModule } from '@nestjs/bullmq';
import { type DynamicModule, Global, Module } from '@nestjs/common';
import { createPostgresBackend, setDefaultBackendFactory } from 'bullmq';
import { type AppConfig, QUEUE } from '@app/common';
import { JobQueue } from './job-queue';
import { QueueBackendCheck } from './queue-backend-check';

/**
 * BullMQ with both queues registered and the JobQueue producer. It runs on Redis, or with
 * QUEUE_BACKEND=postgres (the embedded mode) on BullMQ's PostgreSQL backend, in the `bullmq`
 * schema of the service's own database; the backend is checked against the database's record.
 */
@Global()
@Module({})
export class QueueModule {
  static forRoot(config: AppConfig): DynamicModule {
    let connection: Record<string, unknown>;
    if (config.queueBackend === 'redis') {
      // Workers block on Redis: BullMQ wants unlimited retries per request on their connections.
      connection = { url: config.redisUrl, maxRetriesPerRequest: null };
    } else {
      // Must happen before any Queue or Worker is constructed, which is later, when Nest builds the providers.
      setDefaultBackendFactory(createPostgresBackend);
      // Its workers wait on LISTEN, which wants a session: PostgreSQL itself, never a transaction pooler.
      connection = { connectionString: config.databaseDirectUrl, migrate: true, max: 5 };
    }
    return {
      module: QueueModule,
      imports: [BullModule.forRoot({ prefix: config.queuePrefix, connection }), BullModule.registerQueue({ name: QUEUE.orders }, { name: QUEUE.callbacks })],
      providers: [JobQueue, QueueBackendCheck],
      exports: [JobQueue, BullModule],
    };
  }
}
