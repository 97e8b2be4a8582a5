import { Injectable } from '@nestjs/common';
import { AppConfig, unixSeconds } from '@app/common';
import { adaptersForMode } from '@app/channels';
import { type Channel, type ChannelCategory, ChannelRepository, type Merchant } from '@app/db';
import { CATEGORY_TEXT, payMethodText } from './channel-texts';

/** A channel as getPayChannels shows it: exactly the interface's fields, nothing from the config. */
export interface PayChannelView {
  id: number;
  category: ChannelCategory;
  name: string;
  pay_method: string;
  category_text: string;
  pay_method_text: string;
  createtime: number;
  updatetime: number;
}

function toView(c: Channel): PayChannelView {
  return {
    id: c.id,
    category: c.category,
    name: c.name,
    pay_method: c.payMethod,
    category_text: CATEGORY_TEXT[c.category],
    pay_method_text: payMethodText(c.payMethod),
    createtime: unixSeconds(c.createdAt),
    updatetime: unixSeconds(c.updatedAt),
  };
}

@Injectable()
export class ChannelsService {
  constructor(
    private readonly channels: ChannelRepository,
    private readonly config: AppConfig,
  ) {}

  /** Only channels of the merchant's own mode (SPEC 5), even where an older link says otherwise. */
  async listForMerchant(merchant: Merchant, category?: ChannelCategory): Promise<{ list: PayChannelView[]; total: number }> {
    const adapters = adaptersForMode(merchant.mode, this.config.sandboxEnabled);
    const list = (await this.channels.listLinkedEnabled(merchant.id, adapters, category)).map(toView);
    return { list, total: list.length };
  }
}
