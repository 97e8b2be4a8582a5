import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { IPv6 } from 'ipaddr.js';
import { parseDurationList } from './duration';
import { exitOnStartupFailure } from './startup';
import { parseRedisNodes, type RedisTarget, type RedisTls } from './redis-connection';
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
  /**
   * DATABASE_DIRECT_URL: PostgreSQL itself, for what needs a session of its own (LISTEN, the
   * PostgreSQL queue backend, migrations); DATABASE_URL when unset. Set and different, it says
   * DATABASE_URL is a pooler in transaction pooling (PgBouncer): see `databasePooled`.
   */
  databaseDirectUrl: string;
  /** DATABASE_URL reaches PostgreSQL through a transaction pooler (DATABASE_DIRECT_URL set to another URL): nothing session-scoped goes through it. */
  databasePooled: boolean;
  /** DATABASE_REPLICA_URL: a streaming replica for the read-only merchant queries (lists, statements, exports); null: those read the primary. */
  databaseReplicaUrl: string | null;
  /** Absent only with QUEUE_BACKEND=postgres (the embedded mode): nonces then live in a table. */
  redisUrl: string | null;
  /** Where Redis is: REDIS_URL, REDIS_SENTINELS + REDIS_SENTINEL_NAME, or REDIS_CLUSTER_NODES (null: none, the embedded mode). */
  redis: RedisTarget | null;
  /** QUEUE_BACKEND: where BullMQ keeps the jobs; every process of a deployment the same, checked against the database (SPEC 10). */
  queueBackend: 'redis' | 'postgres';
  /** DATABASE_STATEMENT_TIMEOUT_MS: the longest one statement of the apps' connections may run (0: no limit). */
  statementTimeoutMs: number;
  /** DATABASE_POOL_SIZE: the most database connections one process opens (null: each app's own default, API 10, worker its concurrency + 6). */
  databasePoolSize: number | null;
  /** The master key ring (MASTER_KEY, MASTER_KEYS or MASTER_KEY_FILE): the first seals, every one opens. */
  masterKeys: Buffer[];
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
  /** RETENTION_DAYS: callback attempts, deliveries and order events older than this go (SPEC 10), unless still needed. */
  retentionDays: number;
  /** WORKER_METRICS_PORT: the worker serves its Prometheus metrics on this port (0: not served). */
  workerMetricsPort: number;
  /** METRICS_MERCHANT_LABELS: the most merchant_id values a worker's per-merchant delivery counter keeps; the rest count as "other". */
  metricsMerchantLabels: number;
  /** WORKER_HEALTH_FILE: the worker's heartbeat, which `main.js --health` (the container healthcheck) reads. */
  workerHealthFile: string;
  rateLimitMerchantPerSecond: number;
  rateLimitMerchantBurst: number;
  rateLimitIpPerSecond: number;
  /** Failed authentications per second per client IP, burst twice that (SPEC 3); past it the IP's merchant requests are 42900. */
  rateLimitAuthFailPerSecond: number;
  /** PORTAL_SIGNIN_PER_MINUTE: portal sign-in attempts per client IP per minute, whatever the email (SPEC 8a). */
  portalSigninPerMinute: number;
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
  /** RECON_AT: when the daily reconciliation runs, HH:MM in Asia/Shanghai (SPEC 6; default 10:30). */
  reconAt: { hour: number; minute: number };
  /** Basic auth for the queue dashboard; the dashboard is off unless both are set. */
  adminUser: string | null;
  adminPassword: string | null;

  constructor(values: Omit<AppConfig, 'masterKey'>) {
    Object.assign(this, values);
  }

  /** The key that seals (the ring's first); also the root the portal derives its cookie keys from. */
  get masterKey(): Buffer {
    return this.masterKeys[0];
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

function timeOfDay(env: Env, name: string, fallback: string): { hour: number; minute: number } {
  const raw = text(env, name, fallback);
  const m = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(raw);
  if (!m) throw new ConfigError(name, `must be HH:MM (00:00 to 23:59), got "${raw}"`);
  return { hour: Number(m[1]), minute: Number(m[2]) };
}

const KEY_HINT = 'the base64 of 32 random bytes (openssl rand -base64 32)';

function decodeKey(name: string, raw: string): Buffer {
  const key = Buffer.from(raw, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(raw) || key.length !== 32) throw new ConfigError(name, `must be ${KEY_HINT}`);
  return key;
}

/**
 * The master key ring, first key sealing: MASTER_KEY (one key), MASTER_KEYS (new first, old
 * after, during a rotation) or MASTER_KEY_FILE (a file holding either form: a Docker or
 * Kubernetes secret). Exactly one of the three.
 */
function masterKeys(env: Env): Buffer[] {
  const given = (['MASTER_KEY', 'MASTER_KEYS', 'MASTER_KEY_FILE'] as const).filter((name) => env[name]);
  if (given.length === 0) throw new ConfigError('MASTER_KEY', `is required (${KEY_HINT}; or MASTER_KEYS during a rotation, or MASTER_KEY_FILE)`);
  if (given.length > 1) throw new ConfigError(given[1], `cannot be set together with ${given[0]}: set one of them`);
  const name = given[0];
  let raw = env[name] as string;
  if (name === 'MASTER_KEY_FILE') {
    try {
      raw = readFileSync(raw, 'utf8');
    } catch (err) {
      throw new ConfigError(name, `cannot be read: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`);
    }
  }
  const entries = raw.split(/[\s,]+/).filter(Boolean);
  if (entries.length === 0) throw new ConfigError(name, `must hold ${KEY_HINT}`);
  if (name === 'MASTER_KEY' && entries.length > 1) throw new ConfigError(name, 'holds one key; use MASTER_KEYS=new,old during a rotation');
  const keys = entries.map((entry) => decodeKey(name, entry));
  if (new Set(keys.map((key) => key.toString('hex'))).size !== keys.length) throw new ConfigError(name, 'lists the same key twice');
  return keys;
}

function logFormat(env: Env): 'json' | 'pretty' {
  const raw = text(env, 'LOG_FORMAT', 'json');
  if (raw !== 'json' && raw !== 'pretty') throw new ConfigError('LOG_FORMAT', 'must be json or pretty');
  return raw;
}

/** proxy-addr's named range within SPEC 10's widths; its other names hold IPv6 ranges wider than /32. */
const NAMED_PROXY_RANGES = ['loopback'];
const WIDE_NAMED_PROXY_RANGES: Record<string, string> = { linklocal: 'fe80::/10', uniquelocal: 'fc00::/7' };
/** SPEC 10: the widest proxy range trusted, per family; anything wider lets too many clients name their own address. */
const WIDEST_PROXY_PREFIX = { 4: 8, 6: 32 } as const;

/** What is wrong with one TRUST_PROXY entry, or null. */
function proxyEntryProblem(entry: string): string | null {
  if (NAMED_PROXY_RANGES.includes(entry)) return null;
  if (entry in WIDE_NAMED_PROXY_RANGES)
    return `${JSON.stringify(entry)} holds ${WIDE_NAMED_PROXY_RANGES[entry]}, wider than /32 (IPv6): name the proxies' own ranges`;
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  const malformed = `${JSON.stringify(entry)} is not an address or CIDR`;
  if (family === 0 || rest.length > 0) return malformed;
  if (prefix === undefined) return null;
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > (family === 4 ? 32 : 128)) return malformed;
  // proxy-addr matches IPv4 clients against ::ffff:0:0/96 ranges too: such a range is judged as the IPv4 range it holds.
  const ipv4 = family === 4 || IPv6.parse(address).isIPv4MappedAddress();
  const widest = ipv4 ? WIDEST_PROXY_PREFIX[4] : WIDEST_PROXY_PREFIX[6];
  const bits = ipv4 && family === 6 ? Number(prefix) - 96 : Number(prefix);
  if (bits >= widest) return null;
  return `${JSON.stringify(entry)} is wider than /${widest} (${ipv4 ? 'IPv4' : 'IPv6'}): every client in it could choose its own address`;
}

/**
 * SPEC 10: a hop count or the proxies' addresses, never `true` nor a range wider than /8
 * (IPv4) or /32 (IPv6): trusting every hop, or half the internet, lets a client choose its own
 * address through X-Forwarded-For and escape the per-IP limits.
 */
function trustProxy(env: Env): false | number | string[] {
  const raw = text(env, 'TRUST_PROXY', 'false').trim();
  if (raw === 'false' || raw === '0') return false;
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  if (raw.toLowerCase() === 'true') {
    throw new ConfigError(
      'TRUST_PROXY',
      `must be a number of proxy hops or a comma list of proxy addresses/CIDRs, got ${JSON.stringify(raw)} (true would let any client choose its own address)`,
    );
  }
  const entries = raw.split(',').map((entry) => entry.trim());
  const problem = entries.map(proxyEntryProblem).find((p) => p !== null);
  if (problem === undefined) return entries;
  throw new ConfigError('TRUST_PROXY', `must be a number of proxy hops or a comma list of proxy addresses/CIDRs: ${problem}`);
}

/** PORT, alone: the API's healthcheck (`main.js --health`) reads nothing else. */
export function apiPort(env: Env = process.env): number {
  return integer(env, 'PORT', 3000, 1, 65535);
}

/** WORKER_HEALTH_FILE, alone: the healthcheck (`main.js --health`) reads nothing else. */
export function workerHealthFile(env: Env = process.env): string {
  return text(env, 'WORKER_HEALTH_FILE', join(tmpdir(), 'merchant-pay-worker.health'));
}

/**
 * SPEC 10: the queues run on Redis (REDIS_URL required), or on PostgreSQL only when
 * QUEUE_BACKEND=postgres says so: a process that merely lacks REDIS_URL must not quietly
 * take jobs from another queue than its neighbours.
 */
function queueBackend(env: Env): 'redis' | 'postgres' {
  const raw = text(env, 'QUEUE_BACKEND', 'redis');
  if (raw !== 'redis' && raw !== 'postgres') throw new ConfigError('QUEUE_BACKEND', `must be redis or postgres, got ${JSON.stringify(raw)}`);
  if (raw === 'redis' && !env.REDIS_URL && !env.REDIS_SENTINELS && !env.REDIS_CLUSTER_NODES)
    throw new ConfigError(
      'REDIS_URL',
      'is required (or REDIS_SENTINELS with REDIS_SENTINEL_NAME, or REDIS_CLUSTER_NODES): the queues run on Redis; QUEUE_BACKEND=postgres on every process runs them on PostgreSQL instead',
    );
  return raw;
}

/**
 * TLS to Redis: a rediss:// REDIS_URL says it itself; Sentinel and a Cluster say REDIS_TLS=true.
 * REDIS_TLS_CA_FILE (PEM) is the CA a private deployment's certificates chain to; without it the
 * system's CAs are trusted (a managed Redis). Either one with nothing to apply to is refused.
 */
function redisTls(env: Env, tlsSaid: boolean): RedisTls | null {
  const caFile = env.REDIS_TLS_CA_FILE || null;
  if (!tlsSaid) {
    if (caFile)
      throw new ConfigError('REDIS_TLS_CA_FILE', 'is for TLS: use a rediss:// REDIS_URL, or REDIS_TLS=true with REDIS_SENTINELS or REDIS_CLUSTER_NODES');
    return null;
  }
  if (!caFile) return { ca: null };
  let ca: string;
  try {
    ca = readFileSync(caFile, 'utf8');
  } catch (err) {
    throw new ConfigError('REDIS_TLS_CA_FILE', `cannot be read: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`);
  }
  if (!ca.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError('REDIS_TLS_CA_FILE', 'must hold PEM certificates (-----BEGIN CERTIFICATE-----)');
  return { ca };
}

/** SPEC 10: one Redis server, a Sentinel-watched primary, or a Cluster; exactly one way named. */
function redisTarget(env: Env): RedisTarget | null {
  const named = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'].filter((name) => env[name]);
  if (named.length > 1) throw new ConfigError(named[1], `cannot be set with ${named[0]}: name Redis one way (a server, Sentinel or a Cluster)`);
  const password = env.REDIS_PASSWORD || null;
  const tlsSaid = bool(env, 'REDIS_TLS', false);
  if (tlsSaid && !env.REDIS_SENTINELS && !env.REDIS_CLUSTER_NODES)
    throw new ConfigError('REDIS_TLS', 'is for REDIS_SENTINELS and REDIS_CLUSTER_NODES: a REDIS_URL says TLS itself (rediss://)');
  if (env.REDIS_URL) {
    const target = url(env, 'REDIS_URL', ['redis:', 'rediss:']);
    return { kind: 'url', url: target, tls: redisTls(env, new URL(target).protocol === 'rediss:') };
  }
  const tls = redisTls(env, tlsSaid);
  if (env.REDIS_SENTINELS) {
    const sentinels = parseRedisNodes(env.REDIS_SENTINELS);
    if (!sentinels)
      throw new ConfigError('REDIS_SENTINELS', 'must be a comma list of host:port, for example sentinel-1:26379,sentinel-2:26379,sentinel-3:26379');
    const name = env.REDIS_SENTINEL_NAME?.trim();
    if (!name)
      throw new ConfigError(
        'REDIS_SENTINEL_NAME',
        'is required with REDIS_SENTINELS: the name the sentinels monitor the primary under (sentinel monitor <name> ...)',
      );
    return { kind: 'sentinel', sentinels, name, password, sentinelPassword: env.REDIS_SENTINEL_PASSWORD || null, tls };
  }
  if (env.REDIS_CLUSTER_NODES) {
    const nodes = parseRedisNodes(env.REDIS_CLUSTER_NODES);
    if (!nodes) throw new ConfigError('REDIS_CLUSTER_NODES', 'must be a comma list of host:port, for example redis-1:6379,redis-2:6379,redis-3:6379');
    return { kind: 'cluster', nodes, password, tls };
  }
  return null;
}

/** Builds the configuration from the environment, or throws a ConfigError naming the first bad variable. */
export function loadConfig(env: Env = process.env): AppConfig {
  const port = apiPort(env);
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
  const redis = redisTarget(env);
  const databaseUrl = url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']);
  const databaseDirectUrl = env.DATABASE_DIRECT_URL ? url(env, 'DATABASE_DIRECT_URL', ['postgres:', 'postgresql:']) : databaseUrl;
  return new AppConfig({
    port,
    databaseUrl,
    databaseDirectUrl,
    databasePooled: databaseDirectUrl !== databaseUrl,
    databaseReplicaUrl: env.DATABASE_REPLICA_URL ? url(env, 'DATABASE_REPLICA_URL', ['postgres:', 'postgresql:']) : null,
    redisUrl: redis?.kind === 'url' ? redis.url : null,
    redis,
    queueBackend: queueBackend(env),
    statementTimeoutMs: integer(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 30_000, 0, 86_400_000),
    databasePoolSize: env.DATABASE_POOL_SIZE === undefined || env.DATABASE_POOL_SIZE === '' ? null : integer(env, 'DATABASE_POOL_SIZE', 10, 2, 1000),
    masterKeys: masterKeys(env),
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
    retentionDays: integer(env, 'RETENTION_DAYS', 90, 1, 36_500),
    workerMetricsPort: integer(env, 'WORKER_METRICS_PORT', 0, 0, 65535),
    metricsMerchantLabels: integer(env, 'METRICS_MERCHANT_LABELS', 20, 0, 1000),
    workerHealthFile: workerHealthFile(env),
    rateLimitMerchantPerSecond: integer(env, 'RATE_LIMIT_MERCHANT_PER_SECOND', 50, 1, 1_000_000),
    rateLimitMerchantBurst: integer(env, 'RATE_LIMIT_MERCHANT_BURST', 100, 1, 1_000_000),
    rateLimitIpPerSecond: integer(env, 'RATE_LIMIT_IP_PER_SECOND', 200, 1, 1_000_000),
    rateLimitAuthFailPerSecond: integer(env, 'RATE_LIMIT_AUTH_FAIL_PER_SECOND', 20, 1, 1_000_000),
    portalSigninPerMinute: integer(env, 'PORTAL_SIGNIN_PER_MINUTE', 20, 1, 1_000_000),
    logLevel,
    logFormat: logFormat(env),
    queuePrefix: text(env, 'QUEUE_PREFIX', 'mp'),
    trustProxy: trustProxy(env),
    metricsToken: env.METRICS_TOKEN || null,
    sandboxEnabled: bool(env, 'SANDBOX_ENABLED', false),
    reconAt: timeOfDay(env, 'RECON_AT', '10:30'),
    channelAllowHttp: bool(env, 'CHANNEL_ALLOW_HTTP', false),
    adminUser: env.ADMIN_USER || null,
    adminPassword: env.ADMIN_PASSWORD || null,
  });
}

/** For main.ts: a bad variable stops the process with one JSON line that names it. */
export function loadConfigOrExit(env: Env = process.env, context = 'Config'): AppConfig {
  try {
    return loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) exitOnStartupFailure(context, `configuration error: ${err.message}`, { variable: err.variable });
    throw err;
  }
}
