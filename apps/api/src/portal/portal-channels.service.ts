import { Injectable } from '@nestjs/common';
import { AppConfig, storedRateE8 } from '@app/common';
import { adaptersForMode } from '@app/channels';
import { type ChannelCategory, ChannelRepository, type MerchantMode } from '@app/db';

/** A channel as the portal shows it: what a merchant needs to use it, never anything from its config. */
export interface PortalChannel {
  id: number;
  name: string;
  category: ChannelCategory;
  payMethods: string[];
  rateE8: number;
  minFen: number;
  maxFen: number;
}

@Injectable()
export class PortalChannelsService {
  constructor(
    private readonly channels: ChannelRepository,
    private readonly config: AppConfig,
  ) {}

  /** The channels createOrder would accept for this merchant: linked, enabled, of its mode (SPEC 5). */
  async list(merchantId: number, mode: MerchantMode): Promise<PortalChannel[]> {
    const linked = await this.channels.listLinkedEnabledWithRates(merchantId, adaptersForMode(mode, this.config.sandboxEnabled));
    return linked.map(({ channel, serviceRate }) => ({
      id: channel.id,
      name: channel.name,
      category: channel.category,
      payMethods: channel.payMethod.split(','),
      rateE8: storedRateE8(serviceRate, `merchant ${merchantId} channel ${channel.id}`),
      minFen: channel.minFen,
      maxFen: channel.maxFen,
    }));
  }
}
