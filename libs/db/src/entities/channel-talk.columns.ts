import { Column } from 'typeorm';

/**
 * What a money-out row (a refund, a payout) keeps of its talk with the channel under "ask once,
 * then query" (askOnceThenQuery): the same columns in both tables, declared once.
 */
export abstract class ChannelTalkColumns {
  /** Why the channel refused, for the operator (never a secret). */
  @Column({ type: 'varchar', length: 256, nullable: true })
  failure: string | null;

  /** Set before the channel is first asked: a later attempt queries before it asks again. */
  @Column({ name: 'channel_requested_at', type: 'timestamptz', nullable: true })
  channelRequestedAt: Date | null;

  /** While a worker talks to the channel about this row, no other does. */
  @Column({ name: 'lease_until', type: 'timestamptz', nullable: true })
  leaseUntil: Date | null;

  /** Who holds the lease: only its holder's release clears it (issue 24). */
  @Column({ name: 'lease_token', type: 'uuid', nullable: true })
  leaseToken: string | null;
}
