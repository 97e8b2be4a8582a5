import { Injectable } from '@nestjs/common';
import { storedRateE8 } from '@app/common';
import { type ChannelCategory, ChannelRepository } from '@app/db';

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
  constructor(private readonly channels: ChannelRepository) {}

  async list(merchantId: number): Promise<PortalChannel[]> {
    const linked = await this.channels.listLinkedEnabledWithRates(merchantId);
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
