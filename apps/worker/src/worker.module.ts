import { type DynamicModule, Module } from '@nestjs/common';
import { Logger as JsonLogger } from 'nestjs-pino';
import { Redis } from 'ioredis';
import { type AppConfig, CommonModule, RedisModule, loggingModule } from '@app/common';
import { DbModule } from '@app/db';
import { OrdersCoreModule } from '@app/orders';
import { JobQueue, QueueModule } from '@app/queue';
import { ReconModule } from '@app/recon';
import { CallbackDeliveryProcessor } from './callbacks/callback-delivery.processor';
import { CallbackSender } from '@app/callbacks';
import { CallbackSweeper } from './callbacks/callback-sweeper';
import { RetentionSweep } from './retention/retention-sweep';
import { WorkerMetrics } from './callbacks/worker-metrics';
import { WorkerDependencies } from './health/worker-dependencies';
import { WorkerHeartbeat } from './health/worker-heartbeat';
import { MaintenanceScheduler } from './jobs/maintenance-scheduler';
import { QueueWorkers } from './jobs/queue-workers';
import { MoneyOutProcessor } from './money-out/money-out.processor';
import { ExpiryLoop } from './orders/expiry-loop';
import { LostNotificationLoop } from './orders/lost-notification-loop';
import { OrdersProcessor } from './orders/orders.processor';
import { ReconDaily } from './recon/recon-daily';
import { WorkerTuning } from './worker-tuning';

/** The queue consumers (callbacks, order confirmation and closes, refunds and payouts, the maintenance sweep) and the expiry loop. */
@Module({})
export class WorkerModule {
  /** `stop`: aborted when the process is told to stop, so a start still waiting for Redis gives up at once. */
  static forRoot(config: AppConfig, tuning: WorkerTuning = new WorkerTuning(), stop?: AbortSignal): DynamicModule {
    return {
      module: WorkerModule,
      // Redis (when REDIS_URL is set) holds the nonces the callbacks claim, shared with the API.
      imports: [
        CommonModule.forRoot(config),
        loggingModule(config),
        RedisModule.forRoot(config),
        DbModule.forRoot(tuning.ordersConcurrency + 6, 'merchant-pay-worker'),
        QueueModule.forRoot(config),
        OrdersCoreModule,
        ReconModule,
      ],
      providers: [
        { provide: WorkerTuning, useValue: tuning },
        {
          provide: WorkerDependencies,
          inject: [JsonLogger, JobQueue, { token: Redis, optional: true }],
          useFactory: (logger: JsonLogger, jobs: JobQueue, redis?: Redis) => new WorkerDependencies(logger, jobs, redis ?? null, stop),
        },
        {
          provide: CallbackSender,
          useFactory: () => new CallbackSender({ allowPrivate: config.callbackAllowPrivate, timeoutMs: tuning.callbackTimeoutMs }),
        },
        CallbackDeliveryProcessor,
        CallbackSweeper,
        RetentionSweep,
        WorkerMetrics,
        OrdersProcessor,
        ExpiryLoop,
        LostNotificationLoop,
        MoneyOutProcessor,
        QueueWorkers,
        MaintenanceScheduler,
        ReconDaily,
        WorkerHeartbeat,
      ],
    };
  }
}
