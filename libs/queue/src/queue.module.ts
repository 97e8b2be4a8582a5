import { BullModule } from '@nestjs/bullmq';
import { type DynamicModule, Global, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { createPostgresBackend, setDefaultBackendFactory } from 'bullmq';
import { type AppConfig, bullConnection, QUEUE, queueKeyPrefix, type RedisClient } from '@app/common';
import { JobQueue } from './job-queue';
import { QueueBackendCheck } from './queue-backend-check';

/**
 * BullMQ with both queues registered and the JobQueue producer. It runs on Redis, or with
 * QUEUE_BACKEND=postgres (the embedded mode) on BullMQ's PostgreSQL backend, in the `bullmq`
 * schema of the service's own database; the backend is checked against the database's record.
 */
/** On a Cluster the queues share a client we made: closed once they are (BullMQ leaves a client it was given open). */
@Injectable()
class SharedQueueClientCloser implements OnApplicationShutdown {
  constructor(
    private readonly jobs: JobQueue,
    private readonly client: () => RedisClient | null,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    const client = this.client();
    if (!client) return;
    await Promise.all(
      Object.values(QUEUE).map((name) =>
        this.jobs
          .queue(name)
          .close()
          .catch(() => undefined),
      ),
    );
    if (client.status !== 'end') await client.quit().catch(() => client.disconnect());
  }
}

@Global()
@Module({})
export class QueueModule {
  static forRoot(config: AppConfig): DynamicModule {
    let connection: Record<string, unknown> | (() => Record<string, unknown> | RedisClient);
    let shared: RedisClient | null = null;
    if (config.queueBackend === 'redis') {
      // Options BullMQ makes its clients from (a server, Sentinel), or a Cluster client, made when the queues are.
      const target = config.redis!;
      connection = () => {
        const made = bullConnection(target);
        if (typeof (made as RedisClient).quit === 'function') shared = made as RedisClient;
        return made;
      };
    } else {
      // Must happen before any Queue or Worker is constructed, which is later, when Nest builds the providers.
      setDefaultBackendFactory(createPostgresBackend);
      // Its workers wait on LISTEN, which wants a session: PostgreSQL itself, never a transaction pooler.
      connection = { connectionString: config.databaseDirectUrl, migrate: true, max: 5 };
    }
    return {
      module: QueueModule,
      imports: [
        // On a Cluster the prefix is hash-tagged, {QUEUE_PREFIX}: every key of both queues in one slot (SPEC 10).
        typeof connection === 'function'
          ? BullModule.forRootAsync({ useFactory: () => ({ prefix: queueKeyPrefix(config.redis, config.queuePrefix), connection: connection() }) })
          : BullModule.forRoot({ prefix: config.queuePrefix, connection }),
        BullModule.registerQueue({ name: QUEUE.orders }, { name: QUEUE.callbacks }),
      ],
      providers: [
        JobQueue,
        QueueBackendCheck,
        { provide: SharedQueueClientCloser, inject: [JobQueue], useFactory: (jobs: JobQueue) => new SharedQueueClientCloser(jobs, () => shared) },
      ],
      exports: [JobQueue, BullModule],
    };
  }
}
