import { DomainError, ErrorCode, apiMessage } from '@app/common';
import { adaptersForMode } from '@app/channels';
import type { ChannelRepository, Merchant } from '@app/db';

/**
 * 40301 for a paychannel_id the merchant cannot use (not linked, disabled, or of the other
 * mode), naming in `data.linked` the channels it can: what getPayChannels lists.
 */
export async function channelNotLinked(
  channels: ChannelRepository,
  merchant: Pick<Merchant, 'id' | 'mode'>,
  paychannelId: number,
  sandboxEnabled: boolean,
): Promise<DomainError> {
  const linked = await channels.listLinkedEnabled(merchant.id, adaptersForMode(merchant.mode, sandboxEnabled));
  return new DomainError(ErrorCode.ChannelUnavailable, apiMessage('channel.notLinked', { paychannel_id: paychannelId }), {
    paychannel_id: paychannelId,
    linked: linked.map((c) => ({ id: c.id, name: c.name, category: c.category, pay_method: c.payMethod })),
  });
}
