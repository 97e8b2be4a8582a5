import { Module } from '@nestjs/common';
import { ChannelAdapters } from '@app/channels';
import { OrderLifecycle } from './order-lifecycle';

/**
 * The order state machine and the channel adapters, for the API and the worker. Needs the
 * global CommonModule, DbModule and QueueModule of the app that imports it.
 */
@Module({
  providers: [OrderLifecycle, ChannelAdapters],
  exports: [OrderLifecycle, ChannelAdapters],
})
export class OrdersCoreModule {}
