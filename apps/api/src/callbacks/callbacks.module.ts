import { Module } from '@nestjs/common';
import { CallbackDeliveryRepository } from '@app/db/repositories/callback-delivery.repository';
import { AuthModule } from '../auth/auth.module';
import { CallbacksController } from './callbacks.controller';
import { CallbacksService } from './callbacks.service';

@Module({
  imports: [AuthModule],
  controllers: [CallbacksController],
  providers: [CallbacksService, CallbackDeliveryRepository],
})
export class CallbacksModule {}
