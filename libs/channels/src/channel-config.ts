import { X509Certificate, createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import type { ChannelAdapterName } from '@app/db';

/** The sensitive part of a channel (SPEC 6): never in a response or a log line. Which keys an adapter takes: CONFIG_KEYS. */
export interface ChannelConfig {
  merchant_no?: string;
  secret_key?: string;
  proxy_url?: string;
  gateway_url?: string;
  /** alipay */
  app_id?: string;
  private_key?: string;
  alipay_public_key?: string;
  gateway?: string;
  /** wechatpay */
  mchid?: string;
  appid?: string;
  merchant_serial_no?: string;
  apiv3_key?: string;
  platform_public_key?: string;
  platform_public_key_id?: string;
  platform_certificates?: Record<string, string>;
}

type ConfigKey = keyof ChannelConfig;

/** Every adapter's config keys, declared once (SPEC 6): anything else is refused, the required ones are checked at channel:create. */
export const CONFIG_KEYS: Record<ChannelAdapterName, { required: readonly ConfigKey[]; optional: readonly ConfigKey[] }> = {
  sandbox: { required: [], optional: ['merchant_no', 'secret_key', 'proxy_url', 'gateway_url'] },
  epay: { required: [], optional: ['merchant_no', 'secret_key', 'proxy_url', 'gateway_url'] },
  alipay: { required: ['app_id', 'private_key', 'alipay_public_key'], optional: ['gateway', 'proxy_url'] },
  wechatpay: {
    required: ['mchid', 'appid', 'merchant_serial_no', 'private_key', 'apiv3_key', 'platform_public_key', 'platform_public_key_id'],
    optional: ['platform_certificates', 'gateway', 'proxy_url'],
  },
};

const URL_KEYS = new Set<ConfigKey>(['proxy_url', 'gateway_url', 'gateway']);
const GATEWAY_KEYS = new Set<ConfigKey>(['gateway_url', 'gateway']);
const PRIVATE_KEYS = new Set<ConfigKey>(['private_key']);
const PUBLIC_KEYS = new Set<ConfigKey>(['alipay_public_key', 'platform_public_key']);
/** A PEM key is longer than any other value; 8 KiB holds an RSA-4096 private key. */
const PEM_MAX = 8192;

export interface ChannelConfigRules {
  /** CHANNEL_ALLOW_HTTP: an http gateway_url is accepted (local test gateways only). */
  allowHttpGateway?: boolean;
  /** Whose keys to check; without it the sandbox/epay keys (the adapters that predate the others). */
  adapter?: ChannelAdapterName;
}

/** SPEC 6: the epay key travels in the gateway's query string, so only https carries it. */
export function assertGatewayProtocol(gatewayUrl: URL, allowHttp: boolean): void {
  if (gatewayUrl.protocol === 'https:' || (allowHttp && gatewayUrl.protocol === 'http:')) return;
  throw new Error('config.gateway_url must be https (the channel key travels in its query string); set CHANNEL_ALLOW_HTTP=true to allow http');
}

/** A PEM the adapter can sign or verify with; the message names the key, never its value. */
function checkPem(key: ConfigKey, pem: string, kind: 'private' | 'public'): void {
  try {
    if (kind === 'private') createPrivateKey(pem);
    else createPublicKey(pem);
  } catch {
    throw new Error(`config.${key} must be a ${kind} key in PEM`);
  }
}

function checkString(key: string, item: unknown, max: number): string {
  if (typeof item !== 'string' || item.length === 0 || item.length > max)
    throw new Error(`config.${key} must be a non-empty string of at most ${max} characters`);
  return item;
}

/** Checks an operator's config object for an adapter; throws an Error naming the bad key (never showing a value). */
export function parseChannelConfig(value: unknown, rules: ChannelConfigRules = {}): ChannelConfig {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('config must be a JSON object');
  const { required, optional } = CONFIG_KEYS[rules.adapter ?? 'epay'];
  const allowed: readonly string[] = [...required, ...optional];
  const config: ChannelConfig = {};
  for (const [key, item] of Object.entries(value)) {
    if (!allowed.includes(key)) throw new Error(`config key "${key}" is not allowed (allowed: ${allowed.join(', ')})`);
    if (key === 'platform_certificates') {
      config.platform_certificates = parseCertificates(item);
      continue;
    }
    const name = key as ConfigKey;
    const text = checkString(key, item, PRIVATE_KEYS.has(name) || PUBLIC_KEYS.has(name) ? PEM_MAX : 512);
    if (URL_KEYS.has(name)) {
      let url: URL;
      try {
        url = new URL(text);
      } catch {
        throw new Error(`config.${key} must be a URL`);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`config.${key} must be http or https`);
      if (GATEWAY_KEYS.has(name)) assertGatewayProtocol(url, rules.allowHttpGateway ?? false);
    }
    if (PRIVATE_KEYS.has(name)) checkPem(name, text, 'private');
    if (PUBLIC_KEYS.has(name)) checkPem(name, text, 'public');
    if (name === 'apiv3_key' && Buffer.byteLength(text, 'utf8') !== 32)
      throw new Error('config.apiv3_key must be 32 characters (the APIv3 key set in the merchant platform)');
    if (name === 'platform_public_key_id' && !/^PUB_KEY_ID_\w{1,64}$/.test(text))
      throw new Error('config.platform_public_key_id must look like PUB_KEY_ID_...');
    (config as Record<string, unknown>)[key] = text;
  }
  const missing = required.filter((key) => config[key] === undefined);
  if (missing.length > 0) throw new Error(`config is missing ${missing.join(', ')}`);
  return config;
}

/** WeChat platform certificates by serial number (hex), each a PEM certificate. */
function parseCertificates(value: unknown): Record<string, string> {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new Error('config.platform_certificates must be an object of serial number -> PEM certificate');
  const certificates: Record<string, string> = {};
  for (const [serial, pem] of Object.entries(value)) {
    if (!/^[0-9A-Fa-f]{1,64}$/.test(serial)) throw new Error('config.platform_certificates keys must be certificate serial numbers (hex)');
    const text = checkString(`platform_certificates.${serial}`, pem, PEM_MAX);
    try {
      new X509Certificate(text);
    } catch {
      throw new Error(`config.platform_certificates.${serial} must be a certificate in PEM`);
    }
    certificates[serial.toUpperCase()] = text;
  }
  return certificates;
}

/** The sandbox signs its notifications with a secret of its own; one is made when none is given. */
export function withGeneratedSecret(config: ChannelConfig): ChannelConfig {
  return config.secret_key ? config : { ...config, secret_key: randomBytes(32).toString('base64url') };
}

export function channelConfigContext(channelId: number): string {
  return `channel:${channelId}`;
}
