import { DomainError, apiMessage, formatYuan } from '@app/common';
import type { Channel } from '@app/db';

/** SPEC 5: an order's amount within its channel's range (orders and sell orders alike), else 40000 naming cny_amount. */
export function assertChannelAmountRange(channel: Pick<Channel, 'minFen' | 'maxFen'>, cnyFen: number): void {
  if (cnyFen < channel.minFen || cnyFen > channel.maxFen) {
    throw DomainError.invalid('cny_amount', apiMessage('cny_amount.channelRange', { min: formatYuan(channel.minFen), max: formatYuan(channel.maxFen) }));
  }
}
