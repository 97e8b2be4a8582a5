import { type DynamicModule, Module } from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { type AppConfig, CommonModule, RedisModule, loggingModule } from '@app/common';
import { DbModule } from '@app/db';
import { QueueModule } from '@app/queue';
import { BalanceModule } from './balance/balance.module';
import { CallbacksModule } from './callbacks/callbacks.module';
import { ChannelsModule } from './channels/channels.module';
import { HealthModule } from './health/health.module';
import { MetricsModule } from './metrics/metrics.module';
import { OrdersModule } from './orders/orders.module';
import { PortalApiModule, PortalModule } from './portal/portal.module';
import { RefundsModule } from './refunds/refunds.module';
import { RegionModule } from './region/region.module';
import { SandboxModule } from './sandbox/sandbox.module';
import { CashierModule } from './cashier/cashier.module';
import { SellOrdersModule } from './sell-orders/sell-orders.module';
import { StatementsModule } from './statements/statements.module';

/** Everything under {base_url} (SPEC 0): the merchant operations and the channel notifications. */
const PREFIXED_MODULES = [ChannelsModule, CallbacksModule, OrdersModule, RefundsModule, SellOrdersModule, PortalApiModule, StatementsModule, BalanceModule];

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CommonModule.forRoot(config),
        loggingModule(config),
        RedisModule.forRoot(config),
        DbModule.forRoot(10, 'merchant-pay-api'),
        QueueModule.forRoot(config),
        HealthModule,
        MetricsModule,
        RegionModule,
        SandboxModule,
        CashierModule,
        PortalModule,
        ...PREFIXED_MODULES,
        RouterModule.register(PREFIXED_MODULES.map((module) => ({ path: config.apiPrefix, module }))),
      ],
    };
  }
}
