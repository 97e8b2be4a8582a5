import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { ConnectionOptions } from 'node:tls';

/** One Redis node's address, as REDIS_SENTINELS and REDIS_CLUSTER_NODES list them. */
export interface RedisNode {
  host: string;
  port: number;
}

/**
 * Where a deployment's Redis is (SPEC 10): one server (REDIS_URL), a Sentinel-watched primary
 * (REDIS_SENTINELS + REDIS_SENTINEL_NAME: ioredis asks the sentinels for the current primary and
 * asks again after a failover), or a Redis Cluster (REDIS_CLUSTER_NODES: any few nodes; ioredis
 * learns the rest and follows slot moves). REDIS_PASSWORD authenticates to the data nodes of the
 * last two (REDIS_URL carries its own), REDIS_SENTINEL_PASSWORD to the sentinels. `tls`: every
 * connection is TLS (a rediss:// URL, or REDIS_TLS=true for Sentinel, sentinels included, and for
 * a Cluster), verified against REDIS_TLS_CA_FILE's certificates or else the system's.
 */
export type RedisTarget =
  | { kind: 'url'; url: string; tls: RedisTls | null }
  | { kind: 'sentinel'; sentinels: RedisNode[]; name: string; password: string | null; sentinelPassword: string | null; tls: RedisTls | null }
  | { kind: 'cluster'; nodes: RedisNode[]; password: string | null; tls: RedisTls | null };

/** TLS to Redis: the CA certificates (PEM) a server's certificate must chain to, or null for the system's. */
export interface RedisTls {
  ca: string | null;
}

/** ioredis's `tls`: the server's certificate and name are always checked (Node's defaults), against `ca` when given. */
function tlsOptions(tls: RedisTls): ConnectionOptions {
  return tls.ca ? { ca: tls.ca } : {};
}

/**
 * The one client type our code holds: a Cluster answers the same commands (and defineCommand
 * scripts, routed by their first key), so it travels under ioredis's `Redis` type and DI token.
 */
export type RedisClient = Redis;

/** What a client is for: commands answered at once, or BullMQ's blocking reads. */
export type RedisUse = 'requests' | 'queue';

function optionsFor(use: RedisUse, extra: RedisOptions): RedisOptions {
  return use === 'queue'
    ? // BullMQ's workers block on Redis: unlimited retries per request on their connections.
      { maxRetriesPerRequest: null, ...extra }
    : // A request must fail fast (50300) rather than wait for Redis to come back.
      { maxRetriesPerRequest: 1, enableOfflineQueue: false, ...extra };
}

function clusterOptions(target: Extract<RedisTarget, { kind: 'cluster' }>, use: RedisUse): ClusterOptions {
  const redisOptions = optionsFor(use, {
    ...(target.password ? { password: target.password } : {}),
    // Each node the client learns of (CLUSTER SLOTS names their TLS ports under tls-cluster yes) is reached over TLS too.
    ...(target.tls ? { tls: tlsOptions(target.tls) } : {}),
  });
  return {
    redisOptions,
    // A request must not wait in the Cluster's own queue while it (re)learns the slots either.
    enableOfflineQueue: use === 'queue',
    // Follow a failover within the cluster: MOVED/ASK and CLUSTERDOWN are retried, then the map refreshed.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    slotsRefreshTimeout: 2000,
  };
}

/**
 * Sentinel: a client whose primary went away asks the sentinels for the current one as it
 * reconnects; a write that reached a demoted primary (READONLY) reconnects and is sent again.
 * Not ioredis's failoverDetector: its disconnect on +switch-master can land while a reconnection
 * is resolving the primary, and that client then ends for good ("Connection is closed.", seen in
 * test/redis-sentinel.e2e-spec.ts).
 */
function sentinelOptions(target: Extract<RedisTarget, { kind: 'sentinel' }>): RedisOptions {
  return {
    sentinels: target.sentinels,
    name: target.name,
    reconnectOnError: (err) => (err.message.startsWith('READONLY') ? 2 : false),
    ...(target.password ? { password: target.password } : {}),
    ...(target.sentinelPassword ? { sentinelPassword: target.sentinelPassword } : {}),
    // The sentinels and the primary they name, both over TLS (ioredis asks for each apart).
    ...(target.tls ? { tls: tlsOptions(target.tls), enableTLSForSentinelMode: true, sentinelTLS: tlsOptions(target.tls) } : {}),
  };
}

/** A rediss:// URL turns TLS on by itself; a CA file adds what it trusts. */
function urlOptions(target: Extract<RedisTarget, { kind: 'url' }>): RedisOptions {
  return target.tls?.ca ? { tls: tlsOptions(target.tls) } : {};
}

/** Every ioredis client of ours is made here, from the target the configuration read. */
export function createRedisClient(target: RedisTarget, use: RedisUse, extra: RedisOptions = {}): RedisClient {
  switch (target.kind) {
    case 'url':
      return new Redis(target.url, optionsFor(use, { ...urlOptions(target), ...extra }));
    case 'sentinel':
      return new Redis(optionsFor(use, { ...sentinelOptions(target), ...extra }));
    case 'cluster': {
      const options = clusterOptions(target, use);
      options.redisOptions = { ...options.redisOptions, ...extra };
      if (extra.lazyConnect) options.lazyConnect = true;
      // A Cluster pipelines per slot with its own option, not its nodes'.
      if (extra.enableAutoPipelining) options.enableAutoPipelining = true;
      return new Cluster(target.nodes, options) as unknown as RedisClient;
    }
  }
}

/**
 * BullMQ's `connection`: the options it makes its own clients from (one server, or Sentinel),
 * or on a Cluster a Cluster client it shares between queues and duplicates for each worker's
 * blocking reads (BullMQ makes no Cluster from options). The caller closes a client it was given.
 */
export function bullConnection(target: RedisTarget): Record<string, unknown> | RedisClient {
  switch (target.kind) {
    case 'url':
      return { url: target.url, ...urlOptions(target), maxRetriesPerRequest: null };
    case 'sentinel':
      return { ...sentinelOptions(target), maxRetriesPerRequest: null };
    case 'cluster':
      return createRedisClient(target, 'queue');
  }
}

/**
 * Hash tags (SPEC 10). On a Cluster a script's keys, and every key of one BullMQ queue (its
 * scripts touch many), must live in one slot: the part of a key in its first `{...}` picks the
 * slot. So on a Cluster BullMQ's prefix is `{QUEUE_PREFIX}` (both queues in one slot: a job of
 * one queue may name the other's keys) and each keyspace our scripts use takes one tag.
 * On one server or Sentinel every name stays as it always was: a deployment upgraded in place
 * finds its jobs, nonces and counts where they were. A Cluster is always a new keyspace (the
 * data of a single server does not move into one as it is), so its names need no migration.
 */
export function queueKeyPrefix(target: RedisTarget | null, queuePrefix: string): string {
  return target?.kind === 'cluster' ? `{${queuePrefix}}` : queuePrefix;
}

/**
 * Where a keyspace's keys start: `legacy` (its name before Cluster support) on one server or
 * Sentinel, `{QUEUE_PREFIX:space}` on a Cluster, one slot for every key a script of it touches.
 */
export function keyspacePrefix(target: RedisTarget | null, queuePrefix: string, space: string, legacy: string): string {
  return target?.kind === 'cluster' ? `{${queuePrefix}:${space}}:` : legacy;
}

/** `host:port,host:port` (REDIS_SENTINELS, REDIS_CLUSTER_NODES); null when an entry is not one. */
export function parseRedisNodes(raw: string): RedisNode[] | null {
  const nodes: RedisNode[] = [];
  for (const entry of raw.split(',').map((e) => e.trim())) {
    if (entry === '') continue;
    const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/.exec(entry);
    if (!m) return null;
    const port = Number(m[2]);
    if (port < 1 || port > 65535) return null;
    nodes.push({ host: m[1].replace(/^\[|\]$/g, ''), port });
  }
  return nodes.length > 0 ? nodes : null;
}

/** What the log and errors may say of the target: never a password. */
export function describeRedisTarget(target: RedisTarget): string {
  const list = (nodes: RedisNode[]) => nodes.map((n) => `${n.host}:${n.port}`).join(',');
  switch (target.kind) {
    case 'url': {
      const u = new URL(target.url);
      return `${u.host}${target.tls ? ' (TLS)' : ''}`;
    }
    case 'sentinel':
      return `Sentinel ${target.name} via ${list(target.sentinels)}${target.tls ? ' (TLS)' : ''}`;
    case 'cluster':
      return `Cluster ${list(target.nodes)}${target.tls ? ' (TLS)' : ''}`;
  }
}
