import { Injectable } from '@nestjs/common';
import { AppConfig, SecretBox, parseYuan } from '@app/common';
import {
  CHANNEL_ADAPTERS,
  CHANNEL_CATEGORIES,
  type ChannelAdapterName,
  type ChannelCategory,
  ChannelRepository,
  MerchantRepository,
  PAY_METHODS,
} from '@app/db';
import { channelConfigContext, channelMode, newChannelMode, parseChannelConfig, withGeneratedSecret } from '@app/channels';
import { OperatorError } from './operator-error';
import { OperatorInputError } from './operator-input-error';
import { rateInput } from './rate-input';

export interface NewChannelInput {
  category: string;
  name: string;
  payMethod: string;
  adapter: string;
  rate?: string;
  min?: string;
  max?: string;
  config?: string;
  /** `test` for a provider channel pointed at the provider's own sandbox; the sandbox adapter is always test. */
  mode?: string;
}

/** Payment channels as the operator sets them up: created with their sealed config, enabled or not, linked to merchants (SPEC 10). */
@Injectable()
export class ChannelSetupService {
  constructor(
    private readonly channels: ChannelRepository,
    private readonly merchants: MerchantRepository,
    private readonly secrets: SecretBox,
    private readonly config: AppConfig,
  ) {}

  async create(input: NewChannelInput): Promise<{ id: number }> {
    if (!(CHANNEL_CATEGORIES as readonly string[]).includes(input.category)) {
      throw new OperatorInputError('category', `must be one of ${CHANNEL_CATEGORIES.join(', ')}`);
    }
    if (!input.name || input.name.length > 128) throw new OperatorInputError('name', 'is required (at most 128 characters)');
    const methods = (input.payMethod ?? '').split(',');
    if (!methods.every((m) => (PAY_METHODS as readonly string[]).includes(m)) || new Set(methods).size !== methods.length) {
      throw new OperatorInputError('payMethod', `must be a comma list of distinct ${PAY_METHODS.join(', ')}`);
    }
    if (!(CHANNEL_ADAPTERS as readonly string[]).includes(input.adapter)) {
      throw new OperatorInputError('adapter', `must be one of ${CHANNEL_ADAPTERS.join(', ')}`);
    }
    const mode = newChannelMode(input.adapter as ChannelAdapterName, input.mode);
    if (!mode)
      throw new OperatorInputError('mode', input.adapter === 'sandbox' ? 'is refused: the sandbox adapter only moves test money' : 'must be live or test');
    const minFen = parseYuan(input.min ?? '0.01');
    const maxFen = parseYuan(input.max ?? '1000000.00');
    if (minFen === null || minFen <= 0) throw new OperatorInputError('min', 'must be a yuan amount greater than 0');
    if (maxFen === null || maxFen < minFen) throw new OperatorInputError('max', 'must be a yuan amount not below `min`');
    let config;
    try {
      config = parseChannelConfig(JSON.parse(input.config ?? '{}'), {
        allowHttpGateway: this.config.channelAllowHttp,
        adapter: input.adapter as ChannelAdapterName,
      });
    } catch (err) {
      throw new OperatorInputError('config', `is refused: ${(err as Error).message}`);
    }
    if (input.adapter === 'sandbox') config = withGeneratedSecret(config);
    const sealed = JSON.stringify(config);
    const channel = await this.channels.create(
      {
        category: input.category as ChannelCategory,
        name: input.name,
        payMethod: methods.join(','),
        adapter: input.adapter as ChannelAdapterName,
        mode,
        minFen,
        maxFen,
        defaultRate: rateInput(input.rate, 'rate'),
        enabled: true,
      },
      (id) => this.secrets.seal(sealed, channelConfigContext(id)),
    );
    return { id: channel.id };
  }

  async setEnabled(id: number, enabled: boolean): Promise<{ id: number; enabled: boolean }> {
    if (!(await this.channels.setEnabled(id, enabled))) throw new OperatorError(`no channel ${id}`);
    return { id, enabled };
  }

  async link(merchantId: number, channelId: number, linkRate?: string): Promise<{ merchant_id: number; channel_id: number; service_rate: string }> {
    const merchant = await this.merchants.findById(merchantId);
    if (!merchant) throw new OperatorError(`no merchant ${merchantId}`);
    const channel = await this.channels.findById(channelId);
    if (!channel) throw new OperatorError(`no channel ${channelId}`);
    if (channelMode(channel) !== merchant.mode) {
      throw new OperatorError(
        `channel ${channelId} (${channel.adapter}) moves ${channelMode(channel)} money and merchant ${merchantId} is a ${merchant.mode} merchant: ` +
          'sandbox channels link only to test merchants, other channels only to live merchants (merchant:create --mode test|live)',
      );
    }
    const own = linkRate === undefined ? null : rateInput(linkRate, 'rate');
    await this.channels.link(merchantId, channelId, own);
    return { merchant_id: merchantId, channel_id: channelId, service_rate: own ?? channel.defaultRate };
  }
}
