import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { ProxyAgent } from 'undici';
import { AppConfig, SecretBox } from '@app/common';
import { type Channel, SandboxBillRepository } from '@app/db';
import { type ChannelAdapter, ChannelError } from './channel-adapter';
import { type ChannelConfig, channelConfigContext } from './channel-config';
import { AlipayAdapter } from './alipay/alipay.adapter';
import { EpayAdapter } from './epay.adapter';
import { SandboxAdapter } from './sandbox.adapter';
import { PlatformCertificates } from './wechatpay/wechatpay-certificates';
import { WechatpayAdapter } from './wechatpay/wechatpay.adapter';

/** The AAD of a WeChat pay page's token (before the cashier): it opens for that order only. */
function wechatPageContext(orderNo: string): string {
  return `wechatpay-page:${orderNo}`;
}

/** The AAD of a cashier token: it opens for that order only. */
function cashierContext(orderNo: string): string {
  return `cashier:${orderNo}`;
}

/** SPEC 5: a channel call gets 8 seconds. */
export const CHANNEL_TIMEOUT_MS = 8000;

/** Builds the adapter of a channel from its sealed config, and runs its calls under the timeout. */
@Injectable()
export class ChannelAdapters implements OnApplicationShutdown {
  /** Writable so a test can shorten it. */
  timeoutMs = CHANNEL_TIMEOUT_MS;
  private readonly proxies = new Map<string, ProxyAgent>();
  /** Opened configs by channel id, kept with the sealed text they came from: a changed config is opened again. */
  private readonly opened = new Map<number, { sealed: string; config: Readonly<ChannelConfig> }>();
  /** WeChat platform certificates fetched per channel (platform-certificate mode), kept with the APIv3 key that opens them. */
  private readonly wechatCertificates = new Map<number, { apiV3Key: string; store: PlatformCertificates }>();

  constructor(
    private readonly config: AppConfig,
    private readonly secrets: SecretBox,
    private readonly sandboxBook: SandboxBillRepository,
  ) {}

  /** The sensitive config; callers must never log or return it. */
  channelConfig(channel: Channel): Readonly<ChannelConfig> {
    const cached = this.opened.get(channel.id);
    if (cached?.sealed === channel.configEnc) return cached.config;
    let config: Readonly<ChannelConfig>;
    try {
      config = Object.freeze(JSON.parse(this.secrets.open(channel.configEnc, channelConfigContext(channel.id))) as ChannelConfig);
    } catch (err) {
      throw new ChannelError(`channel ${channel.id} config cannot be opened`, { cause: err });
    }
    this.opened.set(channel.id, { sealed: channel.configEnc, config });
    return config;
  }

  forChannel(channel: Channel): ChannelAdapter {
    const config = this.channelConfig(channel);
    switch (channel.adapter) {
      case 'sandbox':
        return new SandboxAdapter(config.secret_key, this.config.publicBaseUrl, { channelId: channel.id, lines: this.sandboxBook });
      case 'epay':
        return new EpayAdapter(config, config.proxy_url ? this.proxy(config.proxy_url) : undefined, this.config.channelAllowHttp, this.config.publicBaseUrl);
      case 'alipay':
        return new AlipayAdapter(config, this.cashierUrl, config.proxy_url ? this.proxy(config.proxy_url) : undefined, this.config.channelAllowHttp);
      case 'wechatpay':
        return new WechatpayAdapter(
          config,
          this.cashierUrl,
          this.notifyUrl(channel.id),
          config.platform_public_key ? null : this.platformCertificates(channel.id, config.apiv3_key ?? ''),
          config.proxy_url ? this.proxy(config.proxy_url) : undefined,
          this.config.channelAllowHttp,
        );
      default:
        throw new ChannelError(`channel ${channel.id} has an unknown adapter`);
    }
  }

  /** The cashier of an order (SPEC 6): `{PUBLIC_BASE_URL}/pay/{order_no}?token=...`, the token sealed to that order. */
  readonly cashierUrl = (orderNo: string): string => `${this.config.publicBaseUrl}${this.cashierPath(orderNo)}`;

  /** The cashier's path with a fresh token, for a redirect within the service. */
  cashierPath(orderNo: string): string {
    return `/pay/${orderNo}?token=${encodeURIComponent(this.secrets.seal('', cashierContext(orderNo)))}`;
  }

  /** Whether `token` is one this service sealed for the cashier of `orderNo`. */
  openCashierToken(orderNo: string, token: unknown): boolean {
    if (typeof token !== 'string' || token.length > 256) return false;
    try {
      return this.secrets.open(token, cashierContext(orderNo)) === '';
    } catch {
      return false;
    }
  }

  private platformCertificates(channelId: number, apiV3Key: string): PlatformCertificates {
    let held = this.wechatCertificates.get(channelId);
    if (held?.apiV3Key !== apiV3Key) {
      held = { apiV3Key, store: new PlatformCertificates(apiV3Key) };
      this.wechatCertificates.set(channelId, held);
    }
    return held.store;
  }

  /** The code_url a WeChat pay page's token carries (pay_url before the cashier), or null when the token is not that order's. */
  openWechatPageToken(orderNo: string, token: unknown): string | null {
    if (typeof token !== 'string' || token.length > 1024) return null;
    try {
      return this.secrets.open(token, wechatPageContext(orderNo));
    } catch {
      return null;
    }
  }

  /** Where a channel's notifications arrive. */
  notifyUrl(channelId: number): string {
    return `${this.config.publicBaseUrl}${this.config.apiPrefix}/channel/notify/${channelId}`;
  }

  /** Runs one channel call with the timeout: a slow channel is a ChannelError, never a hung request. */
  async call<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort();
        reject(new ChannelError(`channel call timed out after ${this.timeoutMs} ms`));
      }, this.timeoutMs);
    });
    try {
      return await Promise.race([work(controller.signal), timeout]);
    } catch (err) {
      if (err instanceof ChannelError) throw err;
      throw new ChannelError('channel call failed', { cause: err });
    } finally {
      clearTimeout(timer);
    }
  }

  private proxy(url: string): ProxyAgent {
    let agent = this.proxies.get(url);
    if (!agent) {
      agent = new ProxyAgent(url);
      this.proxies.set(url, agent);
    }
    return agent;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.proxies.values()].map((agent) => agent.close().catch(() => undefined)));
  }
}
