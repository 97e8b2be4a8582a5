import { Module } from '@nestjs/common';
import { OrdersCoreModule } from '@app/orders';
import { AuthModule } from '../auth/auth.module';
import { OrdersModule } from '../orders/orders.module';
import { ChannelNotifyController } from './channel-notify.controller';
import { ChannelNotifyService } from './channel-notify.service';
import { ChannelsController } from './channels.controller';
import { ChannelsService } from './channels.service';

@Module({
  imports: [AuthModule, OrdersCoreModule, OrdersModule],
  controllers: [ChannelsController, ChannelNotifyController],
  providers: [ChannelsService, ChannelNotifyService],
})
export class ChannelsModule {}
