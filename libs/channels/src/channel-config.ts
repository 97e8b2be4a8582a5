import { X509Certificate, createPrivateKey, randomBytes } from 'node:crypto';
import type { ChannelAdapterName } from '@app/db';
import { alipayCertSn, alipayRootCertSn } from './alipay/alipay-certificates';
import { certificateChainPem, certificatePem, privateKeyPem, publicKeyPem } from './key-text';
import { type PayMode, PROVIDER_PAY_MODES, isCashierAdapter } from './pay-modes';

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
  /** alipay public-key-certificate mode: the app's certificate, Alipay's, and Alipay's root chain (PEM). */
  app_cert?: string;
  alipay_cert?: string;
  alipay_root_cert?: string;
  gateway?: string;
  /** wechatpay */
  mchid?: string;
  appid?: string;
  merchant_serial_no?: string;
  apiv3_key?: string;
  platform_public_key?: string;
  platform_public_key_id?: string;
  platform_certificates?: Record<string, string>;
  /** The AppSecret of `appid`: JSAPI asks WeChat's OAuth (snsapi_base) for the payer's openid with it. */
  app_secret?: string;
  /** Where WeChat's OAuth lives, default https://open.weixin.qq.com (authorize) and https://api.weixin.qq.com (token); tests point it at a fake. */
  oauth_gateway?: string;
  /** alipay and wechatpay: the pay modes the cashier may use (SPEC 6), default all the provider's. */
  modes?: PayMode[];
}

type ConfigKey = keyof ChannelConfig;

/** One key mode of a provider (SPEC 6 Key modes): the keys it needs, all of them, and none of another mode's. */
export interface KeyMode {
  name: string;
  keys: readonly ConfigKey[];
}

export interface AdapterConfigKeys {
  required: readonly ConfigKey[];
  optional: readonly ConfigKey[];
  /** Exactly one mode: a mode with no keys is the one chosen when no other mode's keys are given. */
  keyModes?: readonly KeyMode[];
}

/** Every adapter's config keys, declared once (SPEC 6): anything else is refused, the required ones are checked at channel:create. */
export const CONFIG_KEYS: Record<ChannelAdapterName, AdapterConfigKeys> = {
  sandbox: { required: [], optional: ['merchant_no', 'secret_key', 'proxy_url', 'gateway_url'] },
  epay: { required: [], optional: ['merchant_no', 'secret_key', 'proxy_url', 'gateway_url'] },
  alipay: {
    required: ['app_id', 'private_key'],
    optional: ['gateway', 'proxy_url', 'modes'],
    keyModes: [
      { name: 'public-key mode', keys: ['alipay_public_key'] },
      { name: 'public-key certificate mode', keys: ['app_cert', 'alipay_cert', 'alipay_root_cert'] },
    ],
  },
  wechatpay: {
    required: ['mchid', 'appid', 'merchant_serial_no', 'private_key', 'apiv3_key'],
    optional: ['platform_certificates', 'app_secret', 'modes', 'gateway', 'oauth_gateway', 'proxy_url'],
    keyModes: [
      { name: 'public-key mode', keys: ['platform_public_key', 'platform_public_key_id'] },
      // No key: the platform certificates are fetched from GET /v3/certificates and decrypted with apiv3_key.
      { name: 'platform-certificate mode', keys: [] },
    ],
  },
};

const URL_KEYS = new Set<ConfigKey>(['proxy_url', 'gateway_url', 'gateway', 'oauth_gateway']);
const GATEWAY_KEYS = new Set<ConfigKey>(['gateway_url', 'gateway', 'oauth_gateway']);
const PRIVATE_KEYS = new Set<ConfigKey>(['private_key']);
const PUBLIC_KEYS = new Set<ConfigKey>(['alipay_public_key', 'platform_public_key']);
const CERTIFICATE_KEYS = new Set<ConfigKey>(['app_cert', 'alipay_cert']);
/** A PEM key is longer than any other value; 8 KiB holds an RSA-4096 private key, 16 KiB a root chain of a few certificates. */
const PEM_MAX = 8192;
const CHAIN_MAX = 16384;

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

/** A key or certificate the adapter can use, as PEM (pasted as PEM or bare base64); the message names the key, never its value. */
function readPem(key: ConfigKey, text: string): string {
  try {
    if (PRIVATE_KEYS.has(key)) return privateKeyPem(text);
    if (PUBLIC_KEYS.has(key)) return publicKeyPem(text);
    if (CERTIFICATE_KEYS.has(key)) {
      const pem = certificatePem(text);
      alipayCertSn(pem);
      return pem;
    }
    // Alipay's root file: every certificate kept (an SM2 root among them), at least one RSA one to name.
    const chain = certificateChainPem(text);
    alipayRootCertSn(chain);
    return chain;
  } catch {
    const what = PRIVATE_KEYS.has(key) ? 'a private key' : PUBLIC_KEYS.has(key) ? 'a public key' : CERTIFICATE_KEYS.has(key) ? 'a certificate' : 'certificates';
    throw new Error(`config.${key} must be ${what} in PEM or the bare base64 the console shows`);
  }
}

/** The key mode the given keys make, or an Error naming what is missing or mixed. */
function checkKeyMode(config: ChannelConfig, modes: readonly KeyMode[]): KeyMode {
  const given = modes.filter((mode) => mode.keys.some((key) => config[key] !== undefined));
  if (given.length > 1) throw new Error(`config mixes ${given.map((m) => m.name).join(' and ')}: give the keys of one`);
  const mode = given[0] ?? modes.find((m) => m.keys.length === 0);
  if (!mode) throw new Error(`config needs ${modes.map((m) => `${m.keys.join(', ')} (${m.name})`).join(' or ')}`);
  const missing = mode.keys.filter((key) => config[key] === undefined);
  if (missing.length > 0) throw new Error(`config is missing ${missing.join(', ')} (${mode.name})`);
  return mode;
}

/** `modes`: a list (or comma list) of the provider's modes, each once. */
function parseModes(adapter: ChannelAdapterName, value: unknown): PayMode[] {
  const offered: readonly string[] = isCashierAdapter(adapter) ? PROVIDER_PAY_MODES[adapter] : [];
  const list = typeof value === 'string' ? value.split(',').map((m) => m.trim()) : value;
  if (!Array.isArray(list) || list.length === 0 || list.some((m) => typeof m !== 'string' || !offered.includes(m)) || new Set(list).size !== list.length)
    throw new Error(`config.modes must be a list of distinct ${offered.join(', ')}`);
  return list as PayMode[];
}

function checkString(key: string, item: unknown, max: number): string {
  if (typeof item !== 'string' || item.length === 0 || item.length > max)
    throw new Error(`config.${key} must be a non-empty string of at most ${max} characters`);
  return item;
}

/** Checks an operator's config object for an adapter; throws an Error naming the bad key (never showing a value). */
export function parseChannelConfig(value: unknown, rules: ChannelConfigRules = {}): ChannelConfig {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('config must be a JSON object');
  const adapter = rules.adapter ?? 'epay';
  const { required, optional, keyModes = [] } = CONFIG_KEYS[adapter];
  const allowed: readonly string[] = [...required, ...keyModes.flatMap((m) => m.keys), ...optional];
  const config: ChannelConfig = {};
  for (const [key, item] of Object.entries(value)) {
    if (!allowed.includes(key)) throw new Error(`config key "${key}" is not allowed (allowed: ${allowed.join(', ')})`);
    if (key === 'platform_certificates') {
      config.platform_certificates = parseCertificates(item);
      continue;
    }
    if (key === 'modes') {
      config.modes = parseModes(adapter, item);
      continue;
    }
    const name = key as ConfigKey;
    const pem = PRIVATE_KEYS.has(name) || PUBLIC_KEYS.has(name) || CERTIFICATE_KEYS.has(name) || name === 'alipay_root_cert';
    let text = checkString(key, item, name === 'alipay_root_cert' ? CHAIN_MAX : pem ? PEM_MAX : 512);
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
    if (pem) text = readPem(name, text);
    if (name === 'app_secret' && !/^[\x21-\x7e]{1,128}$/.test(text)) throw new Error('config.app_secret must be the AppSecret as the console shows it');
    if (name === 'apiv3_key' && Buffer.byteLength(text, 'utf8') !== 32)
      throw new Error('config.apiv3_key must be 32 characters (the APIv3 key set in the merchant platform)');
    if (name === 'platform_public_key_id' && !/^PUB_KEY_ID_\w{1,64}$/.test(text))
      throw new Error('config.platform_public_key_id must look like PUB_KEY_ID_...');
    (config as Record<string, unknown>)[key] = text;
  }
  const missing = required.filter((key) => config[key] === undefined);
  if (missing.length > 0) throw new Error(`config is missing ${missing.join(', ')}`);
  if (keyModes.length > 0) checkKeyMode(config, keyModes);
  if (config.app_cert && config.private_key && !new X509Certificate(config.app_cert).checkPrivateKey(createPrivateKey(config.private_key)))
    throw new Error('config.app_cert is not the certificate of config.private_key');
  if (config.modes?.includes('jsapi') && !config.app_secret)
    throw new Error("config.modes has jsapi, which needs app_secret (the payer's openid comes from WeChat OAuth)");
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
      certificates[serial.toUpperCase()] = certificatePem(text);
    } catch {
      throw new Error(`config.platform_certificates.${serial} must be a certificate in PEM`);
    }
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
