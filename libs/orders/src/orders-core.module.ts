import { Module } from '@nestjs/common';
import { CallbackJobs, DESTINATION_GATE_PROVIDER, DestinationGate } from '@app/callbacks';
import { ChannelAdapters } from '@app/channels';
import { JobsAfterCommit } from './jobs-after-commit';
import { Transitions } from './transitions';
import { OrderLifecycle } from './order-lifecycle';
import { RefundLifecycle } from './refund-lifecycle';
import { PayoutLifecycle } from './payout-lifecycle';

/**
 * The order, refund and sell order state machines and the channel adapters, for the API and
 * the worker. Needs the global CommonModule, DbModule and QueueModule of the app that imports it.
 */
@Module({
  providers: [OrderLifecycle, RefundLifecycle, PayoutLifecycle, JobsAfterCommit, CallbackJobs, Transitions, ChannelAdapters, DESTINATION_GATE_PROVIDER],
  exports: [OrderLifecycle, RefundLifecycle, PayoutLifecycle, JobsAfterCommit, CallbackJobs, Transitions, ChannelAdapters, DestinationGate],
})
export class OrdersCoreModule {}
