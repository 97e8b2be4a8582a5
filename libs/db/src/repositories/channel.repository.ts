import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import type { DataSource, Repository } from 'typeorm';
import { Channel, type ChannelCategory, MerchantChannel } from '../entities';

export type NewChannel = Omit<Channel, 'id' | 'createdAt' | 'updatedAt' | 'configEnc'>;

/** A channel as one merchant sees it: its link's rate, else the channel's default. */
export interface LinkedChannel {
  channel: Channel;
  serviceRate: string;
}

@Injectable()
export class ChannelRepository {
  constructor(
    @InjectRepository(Channel) private readonly channels: Repository<Channel>,
    @InjectRepository(MerchantChannel) private readonly links: Repository<MerchantChannel>,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /** The merchant's linked, enabled channels, ordered by id. */
  listLinkedEnabled(merchantId: number, category?: ChannelCategory): Promise<Channel[]> {
    const query = this.channels
      .createQueryBuilder('c')
      .innerJoin(MerchantChannel, 'mc', 'mc.channelId = c.id AND mc.merchantId = :merchantId', { merchantId })
      .where('c.enabled = true')
      .orderBy('c.id', 'ASC');
    if (category) query.andWhere('c.category = :category', { category });
    return query.getMany();
  }

  /** The channel when it is linked to the merchant and enabled, with the rate that applies; else null. */
  async findLinkedEnabled(merchantId: number, channelId: number): Promise<LinkedChannel | null> {
    // One round trip on createOrder's hot path: the link's rate joined onto the channel.
    const { entities, raw } = await this.channels
      .createQueryBuilder('c')
      .innerJoin(MerchantChannel, 'mc', 'mc.channelId = c.id AND mc.merchantId = :merchantId', { merchantId })
      .addSelect('mc.rate', 'link_rate')
      .where('c.id = :channelId AND c.enabled = true', { channelId })
      .getRawAndEntities<{ link_rate: string | null }>();
    const channel = entities[0];
    if (!channel) return null;
    return { channel, serviceRate: raw[0].link_rate ?? channel.defaultRate };
  }

  findById(id: number): Promise<Channel | null> {
    return this.channels.findOneBy({ id });
  }

  /** Inserts the channel, then seals its config under a context naming its id, in one transaction. */
  create(values: NewChannel, sealConfig: (channelId: number) => string): Promise<Channel> {
    return this.dataSource.transaction(async (em) => {
      const channel = await em.save(Channel, em.create(Channel, { ...values, configEnc: '' }));
      channel.configEnc = sealConfig(channel.id);
      await em.update(Channel, { id: channel.id }, { configEnc: channel.configEnc });
      return channel;
    });
  }

  async setEnabled(id: number, enabled: boolean): Promise<boolean> {
    const result = await this.channels.update({ id }, { enabled });
    return (result.affected ?? 0) > 0;
  }

  /** Links (or re-links with a new rate) a channel to a merchant. */
  async link(merchantId: number, channelId: number, rate: string | null): Promise<void> {
    await this.links.upsert({ merchantId, channelId, rate }, ['merchantId', 'channelId']);
  }
}
