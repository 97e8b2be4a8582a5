import { Module } from '@nestjs/common';
import { AppConfig } from '@app/common';
import { CallbackSender } from '@app/callbacks';
import { OrdersCoreModule } from '@app/orders';
import { AuthModule } from '../auth/auth.module';
import { CallbacksController } from './callbacks.controller';
import { CallbacksService } from './callbacks.service';

@Module({
  imports: [AuthModule, OrdersCoreModule],
  controllers: [CallbacksController],
  providers: [
    CallbacksService,
    // callbackTest sends from the API with the worker's rules: the same address guard, timeout and answer limits.
    { provide: CallbackSender, inject: [AppConfig], useFactory: (config: AppConfig) => new CallbackSender({ allowPrivate: config.callbackAllowPrivate }) },
  ],
  exports: [CallbacksService],
})
export class CallbacksModule {}
