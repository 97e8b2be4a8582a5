import { type DynamicModule, Module } from '@nestjs/common';
import { DESTINATION_GATE_PROVIDER } from '@app/callbacks';
import { type AppConfig, CommonModule, RedisModule } from '@app/common';
import { DbModule } from '@app/db';
import { QueueModule } from '@app/queue';
import { CallbackOperationsService } from './callback-operations.service';
import { ChannelSetupService } from './channel-setup.service';
import { KeyResealService } from './key-reseal.service';
import { MerchantAccountService } from './merchant-account.service';
import { MerchantLedgerService } from './merchant-ledger.service';
import { OrderInspectionService } from './order-inspection.service';
import { PortalAccessService } from './portal-access.service';
import { WorkerControlService } from './worker-control.service';

export interface OperatorModuleOptions {
  /** The commands that act on the job queues (worker:pause, callback:circuit:reset) connect to them; the others never do. */
  queues?: boolean;
}

/**
 * What an operator does to merchants, channels, links, portal users, callbacks and orders, as a standalone context: the CLI,
 * the embedded launcher's demo merchant, the chaos script and the tests' fixtures share it.
 */
@Module({})
export class OperatorModule {
  static forRoot(config: AppConfig, options: OperatorModuleOptions = {}): DynamicModule {
    const services = [
      MerchantAccountService,
      MerchantLedgerService,
      ChannelSetupService,
      PortalAccessService,
      KeyResealService,
      CallbackOperationsService,
      OrderInspectionService,
    ];
    const queued = options.queues ? [WorkerControlService] : [];
    return {
      module: OperatorModule,
      imports: [
        CommonModule.forRoot(config),
        DbModule.forRoot(2, 'merchant-pay-cli'),
        ...(options.queues ? [QueueModule.forRoot(config), RedisModule.forRoot(config)] : []),
      ],
      // With the queues, the (merchant, destination) gate too: callback:circuit:reset closes the circuit where the workers read it.
      providers: [...services, ...queued, ...(options.queues ? [DESTINATION_GATE_PROVIDER] : [])],
      exports: [...services, ...queued],
    };
  }

  /** The merchant's account service inside an app that already has the global CommonModule and DbModule (the API's portal). */
  static forFeature(): DynamicModule {
    return { module: OperatorModule, providers: [MerchantAccountService], exports: [MerchantAccountService] };
  }
}
