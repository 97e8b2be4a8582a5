import { isIP } from 'node:net';
import { parseDurationList } from './duration';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** SPEC 7's retry delays after the first attempt. */
export const DEFAULT_CALLBACK_RETRY_SCHEDULE = '15s,15s,30s,3m,10m,20m,30m,30m,30m,1h,3h,3h,3h,6h,6h';

/** Every attempt a callback delivery gets: the first, plus one per scheduled delay. */
export function callbackAttemptsLimit(scheduleMs: readonly number[]): number {
  return scheduleMs.length + 1;
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Typed, validated configuration: read once at start, then only through this object (also its DI token). */
export class AppConfig {
  port: number;
  databaseUrl: string;
  /** Absent in the embedded mode: the queue then runs on PostgreSQL and nonces live in a table. */
  redisUrl: string | null;
  masterKey: Buffer;
  apiPrefix: string;
  publicBaseUrl: string;
  authToleranceSeconds: number;
  orderExpireSeconds: number;
  callbackRetryScheduleMs: number[];
  callbackAllowPrivate: boolean;
  /** CALLBACK_EGRESS_ADDRESSES: free text the operator publishes (the addresses callbacks leave from, for merchants' allowlists); shown on the portal's developers page. */
  callbackEgressAddresses: string | null;
  /** CALLBACK_DESTINATION_CONCURRENCY: attempts in flight per destination (scheme, host, port), across every worker (SPEC 7). */
  callbackDestinationConcurrency: number;
  /** CALLBACK_CIRCUIT_FAILURES: consecutive failed attempts that open a destination's circuit. */
  callbackCircuitFailures: number;
  /** CALLBACK_CIRCUIT_PROBE_SECONDS: while a circuit is open, one probe this often. */
  callbackCircuitProbeSeconds: number;
  /** WORKER_METRICS_PORT: the worker serves its Prometheus metrics on this port (0: not served). */
  workerMetricsPort: number;
  /** WORKER_HEALTH_FILE: the worker's heartbeat, which `main.js --health` (the container healthcheck) reads. */
  workerHealthFile: string;
  rateLimitMerchantPerSecond: number;
  rateLimitMerchantBurst: number;
  rateLimitIpPerSecond: number;
  /** Failed authentications per second per client IP, burst twice that (SPEC 3); past it the IP's merchant requests are 42900. */
  rateLimitAuthFailPerSecond: number;
  logLevel: LogLevel;
  /** LOG_FORMAT: json (default) or pretty (the embedded mode's terminal). */
  logFormat: 'json' | 'pretty';
  /** BullMQ key prefix (QUEUE_PREFIX, default "mp"): lets tests and deployments share one Redis. */
  queuePrefix: string;
  /** TRUST_PROXY: how many proxies, or which proxy addresses, may name the client in X-Forwarded-For (false: none). */
  trustProxy: false | number | string[];
  /** METRICS_TOKEN: when set, /metrics wants it as a bearer token. */
  metricsToken: string | null;
  /** SANDBOX_ENABLED: the sandbox channel works (checkout pages, orders); off in production unless set. */
  sandboxEnabled: boolean;
  /** CHANNEL_ALLOW_HTTP: a channel's gateway_url may be http (local test gateways); else https only (SPEC 6). */
  channelAllowHttp: boolean;
  /** Basic auth for the queue dashboard; the dashboard is off unless both are set. */
  adminUser: string | null;
  adminPassword: string | null;

  constructor(values: AppConfig) {
    Object.assign(this, values);
  }
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function text(env: Env, name: string, fallback?: string): string {
  const value = env[name];
  if (value === undefined || value === '') {
    if (fallback === undefined) throw new ConfigError(name, 'is required');
    return fallback;
  }
  return value;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name, String(fallback));
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(name, `must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

function url(env: Env, name: string, protocols: string[], fallback?: string): string {
  const raw = text(env, name, fallback);
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, 'is not a URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}`);
  }
  return raw;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = text(env, name, String(fallback)).toLowerCase();
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

function masterKey(env: Env): Buffer {
  const raw = text(env, 'MASTER_KEY');
  const key = Buffer.from(raw, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(raw) || key.length !== 32) {
    throw new ConfigError('MASTER_KEY', 'must be the base64 of 32 random bytes (openssl rand -base64 32)');
  }
  return key;
}

function logFormat(env: Env): 'json' | 'pretty' {
  const raw = text(env, 'LOG_FORMAT', 'json');
  if (raw !== 'json' && raw !== 'pretty') throw new ConfigError('LOG_FORMAT', 'must be json or pretty');
  return raw;
}

/** proxy-addr's named ranges, which Fastify's trustProxy list accepts beside addresses and CIDRs. */
const NAMED_PROXY_RANGES = ['loopback', 'linklocal', 'uniquelocal'];

function isAddressOrCidr(entry: string): boolean {
  if (NAMED_PROXY_RANGES.includes(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}

/**
 * SPEC 10: a hop count or the proxies' addresses, never `true`: trusting every hop lets any
 * client choose its own address through X-Forwarded-For and escape the per-IP limits.
 */
function trustProxy(env: Env): false | number | string[] {
  const raw = text(env, 'TRUST_PROXY', 'false').trim();
  if (raw === 'false' || raw === '0') return false;
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const entries = raw.split(',').map((entry) => entry.trim());
  if (entries.every(isAddressOrCidr)) return entries;
  throw new ConfigError(
    'TRUST_PROXY',
    `must be a number of proxy hops or a comma list of proxy addresses/CIDRs, got "${raw}"${raw.toLowerCase() === 'true' ? ' (true would let any client choose its own address)' : ''}`,
  );
}

/** Builds the configuration from the environment, or throws a ConfigError naming the first bad variable. */
export function loadConfig(env: Env = process.env): AppConfig {
  const port = integer(env, 'PORT', 3000, 1, 65535);
  const prefix = text(env, 'API_PREFIX', '/api');
  if (!/^\/[A-Za-z0-9_\-/]*[A-Za-z0-9_-]$/.test(prefix)) {
    throw new ConfigError('API_PREFIX', 'must start with / and must not end with /, for example /api');
  }
  const schedule = parseDurationList(text(env, 'CALLBACK_RETRY_SCHEDULE', DEFAULT_CALLBACK_RETRY_SCHEDULE));
  if (!schedule) {
    throw new ConfigError('CALLBACK_RETRY_SCHEDULE', 'must be a comma list of durations like 15s,15s,30s,3m,1h');
  }
  const logLevel = text(env, 'LOG_LEVEL', 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  }
  const redisUrl = env.REDIS_URL ? url(env, 'REDIS_URL', ['redis:', 'rediss:']) : null;
  return new AppConfig({
    port,
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    redisUrl,
    masterKey: masterKey(env),
    apiPrefix: prefix,
    publicBaseUrl: url(env, 'PUBLIC_BASE_URL', ['http:', 'https:'], `http://127.0.0.1:${port}`).replace(/\/+$/, ''),
    authToleranceSeconds: integer(env, 'AUTH_TOLERANCE_SECONDS', 300, 1, 86_400),
    orderExpireSeconds: integer(env, 'ORDER_EXPIRE_SECONDS', 1800, 1, 30 * 86_400),
    callbackRetryScheduleMs: schedule,
    callbackAllowPrivate: bool(env, 'CALLBACK_ALLOW_PRIVATE', false),
    callbackEgressAddresses: env.CALLBACK_EGRESS_ADDRESSES?.trim() || null,
    callbackDestinationConcurrency: integer(env, 'CALLBACK_DESTINATION_CONCURRENCY', 8, 1, 1000),
    callbackCircuitFailures: integer(env, 'CALLBACK_CIRCUIT_FAILURES', 20, 1, 1_000_000),
    callbackCircuitProbeSeconds: integer(env, 'CALLBACK_CIRCUIT_PROBE_SECONDS', 60, 1, 86_400),
    workerMetricsPort: integer(env, 'WORKER_METRICS_PORT', 0, 0, 65535),
    workerHealthFile: text(env, 'WORKER_HEALTH_FILE', join(tmpdir(), 'merchant-pay-worker.health')),
    rateLimitMerchantPerSecond: integer(env, 'RATE_LIMIT_MERCHANT_PER_SECOND', 50, 1, 1_000_000),
    rateLimitMerchantBurst: integer(env, 'RATE_LIMIT_MERCHANT_BURST', 100, 1, 1_000_000),
    rateLimitIpPerSecond: integer(env, 'RATE_LIMIT_IP_PER_SECOND', 200, 1, 1_000_000),
    rateLimitAuthFailPerSecond: integer(env, 'RATE_LIMIT_AUTH_FAIL_PER_SECOND', 20, 1, 1_000_000),
    logLevel,
    logFormat: logFormat(env),
    queuePrefix: text(env, 'QUEUE_PREFIX', 'mp'),
    trustProxy: trustProxy(env),
    metricsToken: env.METRICS_TOKEN || null,
    sandboxEnabled: bool(env, 'SANDBOX_ENABLED', false),
    channelAllowHttp: bool(env, 'CHANNEL_ALLOW_HTTP', false),
    adminUser: env.ADMIN_USER || null,
    adminPassword: env.ADMIN_PASSWORD || null,
  });
}

/** For main.ts: a bad variable stops the process with one line that names it. */
export function loadConfigOrExit(env: Env = process.env): AppConfig {
  try {
    return loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}
