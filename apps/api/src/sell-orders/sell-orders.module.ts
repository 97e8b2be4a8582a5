import { Module } from '@nestjs/common';
import { OrdersCoreModule } from '@app/orders';
import { AuthModule } from '../auth/auth.module';
import { SellOrdersController } from './sell-orders.controller';
import { SellOrdersService } from './sell-orders.service';

@Module({
  imports: [AuthModule, OrdersCoreModule],
  controllers: [SellOrdersController],
  providers: [SellOrdersService],
})
export class SellOrdersModule {}
