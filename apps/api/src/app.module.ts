import { type DynamicModule, Module } from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { type AppConfig, CommonModule, RedisModule } from '@app/common';
import { DbModule } from '@app/db';
import { ChannelsModule } from './channels/channels.module';
import { HealthController } from './health/health.controller';

/** Everything under {base_url} (SPEC 0): the merchant operations and the channel notifications. */
const PREFIXED_MODULES = [ChannelsModule];

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CommonModule.forRoot(config),
        RedisModule.forRoot(config),
        DbModule.forRoot(),
        ...PREFIXED_MODULES,
        RouterModule.register(PREFIXED_MODULES.map((module) => ({ path: config.apiPrefix, module }))),
      ],
      controllers: [HealthController],
    };
  }
}
