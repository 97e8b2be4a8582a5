import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import type { DataSource, Repository } from 'typeorm';
import { Channel, type ChannelAdapterName, type ChannelCategory, MerchantChannel, channelModeSql } from '../entities';

export type NewChannel = Omit<Channel, 'id' | 'createdAt' | 'updatedAt' | 'configEnc'>;

/** A channel as one merchant sees it: its link's rate, else the channel's default. */
export interface LinkedChannel {
  channel: Channel;
  serviceRate: string;
}

/** SPEC 6: a channel serves merchants of its own mode only; the sandbox is test money whatever its row says. */
const SAME_MODE = `${channelModeSql('c')} = (SELECT m.mode FROM merchants m WHERE m.id = mc.merchant_id)`;

@Injectable()
export class ChannelRepository {
  constructor(
    @InjectRepository(Channel) private readonly channels: Repository<Channel>,
    @InjectRepository(MerchantChannel) private readonly links: Repository<MerchantChannel>,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /** The merchant's linked, enabled channels on one of `adapters` (the merchant's mode), ordered by id. */
  async listLinkedEnabled(merchantId: number, adapters: readonly ChannelAdapterName[], category?: ChannelCategory): Promise<Channel[]> {
    if (adapters.length === 0) return [];
    const query = this.channels
      .createQueryBuilder('c')
      .innerJoin(MerchantChannel, 'mc', 'mc.channelId = c.id AND mc.merchantId = :merchantId', { merchantId })
      .where('c.enabled = true')
      .andWhere('c.adapter IN (:...adapters)', { adapters })
      .andWhere(SAME_MODE)
      .orderBy('c.id', 'ASC');
    if (category) query.andWhere('c.category = :category', { category });
    return query.getMany();
  }

  /** The merchant's linked, enabled channels on one of `adapters`, with the rate that applies to it, ordered by id. */
  async listLinkedEnabledWithRates(merchantId: number, adapters: readonly ChannelAdapterName[]): Promise<LinkedChannel[]> {
    if (adapters.length === 0) return [];
    const rows = await this.channels
      .createQueryBuilder('c')
      .innerJoin(MerchantChannel, 'mc', 'mc.channelId = c.id AND mc.merchantId = :merchantId', { merchantId })
      .addSelect('mc.rate', 'link_rate')
      .where('c.enabled = true')
      .andWhere('c.adapter IN (:...adapters)', { adapters })
      .andWhere(SAME_MODE)
      .orderBy('c.id', 'ASC')
      .getRawAndEntities<{ link_rate: string | null }>();
    return rows.entities.map((channel, i) => ({ channel, serviceRate: rows.raw[i].link_rate ?? channel.defaultRate }));
  }

  /** The channel when it is linked to the merchant, enabled and on one of `adapters`, with the rate that applies; else null. */
  async findLinkedEnabled(merchantId: number, channelId: number, adapters: readonly ChannelAdapterName[]): Promise<LinkedChannel | null> {
    // One round trip on createOrder's hot path, in plain SQL: the link's rate joined onto the channel.
    const rows: (Omit<Channel, 'minFen' | 'maxFen'> & { minFen: string; maxFen: string; linkRate: string | null })[] = await this.channels.query(
      `SELECT c.id, c.category, c.name, c.pay_method AS "payMethod", c.adapter, c.mode, c.config_enc AS "configEnc", c.min_fen AS "minFen",
              c.max_fen AS "maxFen", c.default_rate AS "defaultRate", c.enabled, c.created_at AS "createdAt", c.updated_at AS "updatedAt",
              mc.rate AS "linkRate"
         FROM channels c JOIN merchant_channels mc ON mc.channel_id = c.id AND mc.merchant_id = $1
        WHERE c.id = $2 AND c.enabled AND c.adapter = ANY($3) AND ${SAME_MODE}`,
      [merchantId, channelId, adapters],
    );
    const row = rows[0];
    if (!row) return null;
    const { linkRate, ...fields } = row;
    return { channel: { ...fields, minFen: Number(fields.minFen), maxFen: Number(fields.maxFen) }, serviceRate: linkRate ?? row.defaultRate };
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
