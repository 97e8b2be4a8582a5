import { type DynamicModule, Global, Module } from '@nestjs/common';
import { TypeOrmModule, getDataSourceToken, getRepositoryToken } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '@app/common';
import { dataSourceOptions } from './data-source';
import { ENTITIES } from './entities';
import { NonceStore } from './nonce.store';
import { markPooled } from './prepared-query';
import { CallbackAttemptRepository } from './repositories/callback-attempt.repository';
import { CallbackDeliveryRepository } from './repositories/callback-delivery.repository';
import { CallbackFiguresRepository } from './repositories/callback-figures.repository';
import { CallbackSweepRepository } from './repositories/callback-sweep.repository';
import { CallbackToolsRepository } from './repositories/callback-tools.repository';
import { ChannelRepository } from './repositories/channel.repository';
import { LedgerRepository } from './repositories/ledger.repository';
import { LostNotificationRepository } from './repositories/lost-notification.repository';
import { MerchantUserRepository } from './repositories/merchant-user.repository';
import { MerchantRepository } from './repositories/merchant.repository';
import { OrderEventRepository } from './repositories/order-event.repository';
import { OrderRepository } from './repositories/order.repository';
import { OrderPrepayRepository } from './repositories/order-prepay.repository';
import { PayoutRepository } from './repositories/payout.repository';
import { PortalSessionRepository } from './repositories/portal-session.repository';
import { RefundRepository } from './repositories/refund.repository';
import { SignInThrottleRepository } from './repositories/sign-in-throttle.repository';
import { SealedValueRepository } from './repositories/sealed-value.repository';
import { StartupChecks } from './startup-checks';
import { ReconRepository } from './repositories/recon.repository';
import { SandboxBillRepository } from './repositories/sandbox-bill.repository';
import { StatementRepository } from './repositories/statement.repository';
import { OperationsRepository } from './repositories/operations.repository';
import { RetentionRepository } from './repositories/retention.repository';
import { SettlementRepository } from './repositories/settlement.repository';
import { TransitionRepository } from './repositories/transition.repository';
import { QueueBackendRepository } from './repositories/queue-backend.repository';
import { OperatorActionRepository } from './repositories/operator-action.repository';

const REPOSITORIES = [
  MerchantRepository,
  ChannelRepository,
  OrderRepository,
  OrderPrepayRepository,
  OrderEventRepository,
  LedgerRepository,
  CallbackAttemptRepository,
  CallbackDeliveryRepository,
  CallbackFiguresRepository,
  CallbackSweepRepository,
  CallbackToolsRepository,
  NonceStore,
  MerchantUserRepository,
  PortalSessionRepository,
  SignInThrottleRepository,
  RefundRepository,
  PayoutRepository,
  SealedValueRepository,
  ReconRepository,
  SandboxBillRepository,
  StatementRepository,
  LostNotificationRepository,
  OperationsRepository,
  RetentionRepository,
  SettlementRepository,
  TransitionRepository,
  QueueBackendRepository,
  OperatorActionRepository,
];

let instances = 0;

/** The database connection and every repository. */
@Global()
@Module({})
export class DbModule {
  static forRoot(poolSize = 10, applicationName = 'merchant-pay'): DynamicModule {
    // @nestjs/typeorm wants one name per DataSource per process, and npm start runs the API and the
    // worker, each with its own, in one: each gets a name, and is injected under the default tokens.
    const name = `db${++instances}`;
    const entityRepositories = ENTITIES.map((entity) => ({
      provide: getRepositoryToken(entity),
      useFactory: (dataSource: DataSource) => dataSource.getRepository(entity),
      inject: [DataSource],
    }));
    return {
      module: DbModule,
      imports: [
        TypeOrmModule.forRootAsync({
          name,
          inject: [AppConfig],
          useFactory: (config: AppConfig) => ({
            ...dataSourceOptions(config.databaseUrl, config.databasePoolSize ?? poolSize, applicationName, config.statementTimeoutMs, {
              pooled: config.databasePooled,
              replicaUrl: config.databaseReplicaUrl,
            }),
            retryAttempts: 3,
            retryDelay: 1000,
          }),
        }),
      ],
      providers: [
        {
          provide: DataSource,
          useFactory: (dataSource: DataSource, config: AppConfig) => (config.databasePooled ? markPooled(dataSource) : dataSource),
          inject: [getDataSourceToken(name), AppConfig],
        },
        ...entityRepositories,
        ...REPOSITORIES,
        StartupChecks,
      ],
      exports: [DataSource, ...entityRepositories.map((r) => r.provide), ...REPOSITORIES, StartupChecks],
    };
  }
}
