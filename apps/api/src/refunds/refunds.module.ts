import { Module } from '@nestjs/common';
import { OrdersCoreModule } from '@app/orders';
import { AuthModule } from '../auth/auth.module';
import { RefundsController } from './refunds.controller';
import { RefundsService } from './refunds.service';

@Module({
  imports: [AuthModule, OrdersCoreModule],
  controllers: [RefundsController],
  providers: [RefundsService],
  exports: [RefundsService],
})
export class RefundsModule {}
