import { randomBytes } from 'node:crypto';

/** The sensitive part of a channel (SPEC 6): never in a response or a log line. */
export interface ChannelConfig {
  merchant_no?: string;
  secret_key?: string;
  proxy_url?: string;
  gateway_url?: string;
}

const KEYS = ['merchant_no', 'secret_key', 'proxy_url', 'gateway_url'] as const;
const URL_KEYS = new Set(['proxy_url', 'gateway_url']);

export interface ChannelConfigRules {
  /** CHANNEL_ALLOW_HTTP: an http gateway_url is accepted (local test gateways only). */
  allowHttpGateway?: boolean;
}

/** SPEC 6: the epay key travels in the gateway's query string, so only https carries it. */
export function assertGatewayProtocol(gatewayUrl: URL, allowHttp: boolean): void {
  if (gatewayUrl.protocol === 'https:' || (allowHttp && gatewayUrl.protocol === 'http:')) return;
  throw new Error('config.gateway_url must be https (the channel key travels in its query string); set CHANNEL_ALLOW_HTTP=true to allow http');
}

/** Checks an operator's config object; throws an Error naming the bad key. */
export function parseChannelConfig(value: unknown, rules: ChannelConfigRules = {}): ChannelConfig {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('config must be a JSON object');
  const config: ChannelConfig = {};
  for (const [key, item] of Object.entries(value)) {
    if (!(KEYS as readonly string[]).includes(key)) throw new Error(`config key "${key}" is not allowed (allowed: ${KEYS.join(', ')})`);
    if (typeof item !== 'string' || item.length === 0 || item.length > 512) throw new Error(`config.${key} must be a non-empty string`);
    if (URL_KEYS.has(key)) {
      let url: URL;
      try {
        url = new URL(item);
      } catch {
        throw new Error(`config.${key} must be a URL`);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`config.${key} must be http or https`);
      if (key === 'gateway_url') assertGatewayProtocol(url, rules.allowHttpGateway ?? false);
    }
    config[key as keyof ChannelConfig] = item;
  }
  return config;
}

/** The sandbox signs its notifications with a secret of its own; one is made when none is given. */
export function withGeneratedSecret(config: ChannelConfig): ChannelConfig {
  return config.secret_key ? config : { ...config, secret_key: randomBytes(32).toString('base64url') };
}

export function channelConfigContext(channelId: number): string {
  return `channel:${channelId}`;
}
