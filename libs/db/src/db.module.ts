import { type DynamicModule, Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '@app/common';
import { dataSourceOptions } from './data-source';
import { ENTITIES } from './entities';
import { NonceStore } from './nonce.store';
import { CallbackDeliveryRepository } from './repositories/callback-delivery.repository';
import { ChannelRepository } from './repositories/channel.repository';
import { LedgerRepository } from './repositories/ledger.repository';
import { MerchantUserRepository } from './repositories/merchant-user.repository';
import { MerchantRepository } from './repositories/merchant.repository';
import { OrderEventRepository } from './repositories/order-event.repository';
import { OrderRepository } from './repositories/order.repository';
import { PortalSessionRepository } from './repositories/portal-session.repository';
import { SignInThrottleRepository } from './repositories/sign-in-throttle.repository';

const REPOSITORIES = [
  MerchantRepository,
  ChannelRepository,
  OrderRepository,
  OrderEventRepository,
  LedgerRepository,
  CallbackDeliveryRepository,
  NonceStore,
  MerchantUserRepository,
  PortalSessionRepository,
  SignInThrottleRepository,
];

/** The database connection and every repository. */
@Global()
@Module({})
export class DbModule {
  static forRoot(poolSize = 10): DynamicModule {
    return {
      module: DbModule,
      imports: [
        TypeOrmModule.forRootAsync({
          inject: [AppConfig],
          useFactory: (config: AppConfig) => ({ ...dataSourceOptions(config.databaseUrl, poolSize), retryAttempts: 3, retryDelay: 1000 }),
        }),
        TypeOrmModule.forFeature(ENTITIES),
      ],
      providers: REPOSITORIES,
      exports: [...REPOSITORIES, TypeOrmModule],
    };
  }
}
