import { Module } from '@nestjs/common';
import { OrdersCoreModule } from '@app/orders';
import { AuthModule } from '../auth/auth.module';
import { OrdersController } from './orders.controller';
import { OrdersService } from './orders.service';
import { ChannelLinkCache } from './channel-link-cache';

@Module({
  imports: [AuthModule, OrdersCoreModule],
  controllers: [OrdersController],
  providers: [OrdersService, ChannelLinkCache],
  exports: [OrdersService, ChannelLinkCache],
})
export class OrdersModule {}
