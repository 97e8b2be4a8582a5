import { type DynamicModule, Module } from '@nestjs/common';
import { type AppConfig, CommonModule, RedisModule, loggingModule } from '@app/common';
import { DbModule } from '@app/db';
import { OrdersCoreModule } from '@app/orders';
import { QueueModule } from '@app/queue';
import { CallbackDeliveryProcessor } from './callbacks/callback-delivery.processor';
import { CallbackSender } from '@app/callbacks';
import { CallbackDispatcher } from './callbacks/callback-dispatcher';
import { WorkerMetrics } from './callbacks/worker-metrics';
import { WorkerHeartbeat } from './health/worker-heartbeat';
import { MaintenanceScheduler } from './jobs/maintenance-scheduler';
import { QueueWorkers } from './jobs/queue-workers';
import { MoneyOutProcessor } from './money-out/money-out.processor';
import { ExpiryLoop } from './orders/expiry-loop';
import { LostNotificationLoop } from './orders/lost-notification-loop';
import { OrdersProcessor } from './orders/orders.processor';
import { WorkerTuning } from './worker-tuning';

/** The callback dispatcher; the queue consumer (order confirmation, refunds and payouts, the maintenance sweep); and the expiry loop. */
@Module({})
export class WorkerModule {
  static forRoot(config: AppConfig, tuning: WorkerTuning = new WorkerTuning()): DynamicModule {
    return {
      module: WorkerModule,
      // Redis (when REDIS_URL is set) holds the nonces the callbacks claim, shared with the API.
      imports: [CommonModule.forRoot(config), loggingModule(config), RedisModule.forRoot(config), DbModule.forRoot(tuning.ordersConcurrency + 6), QueueModule.forRoot(config), OrdersCoreModule],
      providers: [
        { provide: WorkerTuning, useValue: tuning },
        {
          provide: CallbackSender,
          useFactory: () => new CallbackSender({ allowPrivate: config.callbackAllowPrivate, timeoutMs: tuning.callbackTimeoutMs }),
        },
        CallbackDeliveryProcessor,
        CallbackDispatcher,
        WorkerMetrics,
        OrdersProcessor,
        ExpiryLoop,
        LostNotificationLoop,
        MoneyOutProcessor,
        QueueWorkers,
        MaintenanceScheduler,
        WorkerHeartbeat,
      ],
    };
  }
}
