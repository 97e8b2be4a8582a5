import { Module } from '@nestjs/common';
import { OrdersCoreModule } from '@app/orders';
import { AuthModule } from '../auth/auth.module';
import { CallbacksController } from './callbacks.controller';
import { CallbacksService } from './callbacks.service';

@Module({
  imports: [AuthModule, OrdersCoreModule],
  controllers: [CallbacksController],
  providers: [CallbacksService],
  exports: [CallbacksService],
})
export class CallbacksModule {}
