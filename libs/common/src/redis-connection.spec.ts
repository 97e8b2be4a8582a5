import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from './config';
import { createRedisClient, describeRedisTarget, keyspacePrefix, queueKeyPrefix } from './redis-connection';

const base = {
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/x',
  MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
};

function refusal(env: Record<string, string>): string {
  try {
    loadConfig({ ...base, ...env });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message;
  }
  throw new Error('expected a ConfigError');
}

describe('Redis by URL, Sentinel or Cluster (SPEC 10)', () => {
  it('reads Sentinel as its list of sentinels and the name they monitor the primary under', () => {
    const c = loadConfig({ ...base, REDIS_SENTINELS: 'sentinel-1:26379, 10.0.0.2:26380,[::1]:26381', REDIS_SENTINEL_NAME: 'pay', REDIS_PASSWORD: 'p' });
    expect(c.redis).toEqual({
      kind: 'sentinel',
      name: 'pay',
      sentinels: [
        { host: 'sentinel-1', port: 26379 },
        { host: '10.0.0.2', port: 26380 },
        { host: '::1', port: 26381 },
      ],
      password: 'p',
      sentinelPassword: null,
      tls: null,
    });
    expect([c.queueBackend, c.redisUrl]).toEqual(['redis', null]);
  });

  it('reads a Cluster as a few of its nodes', () => {
    const c = loadConfig({ ...base, REDIS_CLUSTER_NODES: 'redis-1:6379,redis-2:6379' });
    expect(c.redis).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'redis-1', port: 6379 },
        { host: 'redis-2', port: 6379 },
      ],
      password: null,
      tls: null,
    });
  });

  it('refuses a Sentinel without its name, a malformed list, and two ways at once, naming the variable', () => {
    expect(refusal({ REDIS_SENTINELS: 's:26379' })).toMatch(/^REDIS_SENTINEL_NAME: is required with REDIS_SENTINELS/);
    expect(refusal({ REDIS_SENTINELS: 's', REDIS_SENTINEL_NAME: 'x' })).toMatch(/^REDIS_SENTINELS: must be a comma list of host:port/);
    expect(refusal({ REDIS_CLUSTER_NODES: 'a:99999' })).toMatch(/^REDIS_CLUSTER_NODES: must be a comma list/);
    expect(refusal({ REDIS_URL: 'redis://x:6379', REDIS_CLUSTER_NODES: 'a:1' })).toMatch(/^REDIS_CLUSTER_NODES: cannot be set with REDIS_URL/);
    expect(refusal({})).toMatch(/^REDIS_URL: is required \(or REDIS_SENTINELS/);
  });

  it('says TLS one way per target: rediss:// for a URL, REDIS_TLS=true for Sentinel (sentinels included) and Cluster, with an optional CA file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mp-redis-tls-'));
    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    writeFileSync(join(dir, 'ca.pem'), pem);
    writeFileSync(join(dir, 'not.pem'), 'hello');
    const ca = join(dir, 'ca.pem');
    expect(loadConfig({ ...base, REDIS_URL: 'rediss://r:6380' }).redis).toEqual({ kind: 'url', url: 'rediss://r:6380', tls: { ca: null } });
    expect(loadConfig({ ...base, REDIS_URL: 'rediss://r:6380', REDIS_TLS_CA_FILE: ca }).redis).toMatchObject({ tls: { ca: pem } });
    expect(loadConfig({ ...base, REDIS_URL: 'redis://r:6379' }).redis).toMatchObject({ tls: null });
    const sentinel = loadConfig({ ...base, REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'x', REDIS_TLS: 'true', REDIS_TLS_CA_FILE: ca }).redis!;
    expect(sentinel).toMatchObject({ kind: 'sentinel', tls: { ca: pem } });
    expect(loadConfig({ ...base, REDIS_CLUSTER_NODES: 'a:6379', REDIS_TLS: '1' }).redis).toMatchObject({ kind: 'cluster', tls: { ca: null } });
    expect(loadConfig({ ...base, REDIS_CLUSTER_NODES: 'a:6379', REDIS_TLS: 'false' }).redis).toMatchObject({ tls: null });
    expect(describeRedisTarget(sentinel)).toBe('Sentinel x via s:26379 (TLS)');
    // Each client made from it asks for TLS where ioredis reads it: a plain-text fallback would be a quiet downgrade.
    const client = createRedisClient(sentinel, 'requests', { lazyConnect: true });
    expect(client.options).toMatchObject({ enableTLSForSentinelMode: true, tls: { ca: pem }, sentinelTLS: { ca: pem } });
    client.disconnect();
    const cluster = createRedisClient(loadConfig({ ...base, REDIS_CLUSTER_NODES: 'a:6379', REDIS_TLS: 'true', REDIS_TLS_CA_FILE: ca }).redis!, 'requests', {
      lazyConnect: true,
    }) as unknown as { options: { redisOptions: { tls: unknown } }; disconnect(): void };
    expect(cluster.options.redisOptions.tls).toEqual({ ca: pem });
    cluster.disconnect();
    const url = createRedisClient(loadConfig({ ...base, REDIS_URL: 'rediss://r:6380', REDIS_TLS_CA_FILE: ca }).redis!, 'requests', { lazyConnect: true });
    expect(url.options.tls).toEqual({ ca: pem });
    url.disconnect();

    expect(refusal({ REDIS_URL: 'rediss://r:6380', REDIS_TLS: 'true' })).toMatch(
      /^REDIS_TLS: is for REDIS_SENTINELS and REDIS_CLUSTER_NODES: a REDIS_URL says TLS itself/,
    );
    expect(refusal({ REDIS_URL: 'redis://r:6379', REDIS_TLS_CA_FILE: ca })).toMatch(/^REDIS_TLS_CA_FILE: is for TLS/);
    expect(refusal({ REDIS_CLUSTER_NODES: 'a:6379', REDIS_TLS_CA_FILE: ca })).toMatch(/^REDIS_TLS_CA_FILE: is for TLS/);
    expect(refusal({ REDIS_CLUSTER_NODES: 'a:6379', REDIS_TLS: 'yes' })).toMatch(/^REDIS_TLS: must be true or false/);
    expect(refusal({ REDIS_CLUSTER_NODES: 'a:6379', REDIS_TLS: 'true', REDIS_TLS_CA_FILE: join(dir, 'missing.pem') })).toMatch(
      /^REDIS_TLS_CA_FILE: cannot be read: ENOENT/,
    );
    expect(refusal({ REDIS_CLUSTER_NODES: 'a:6379', REDIS_TLS: 'true', REDIS_TLS_CA_FILE: join(dir, 'not.pem') })).toMatch(
      /^REDIS_TLS_CA_FILE: must hold PEM certificates/,
    );
  });

  it('keeps every key name of one server or Sentinel as it was; on a Cluster hash-tags the queues and each keyspace', () => {
    const url = loadConfig({ ...base, REDIS_URL: 'redis://127.0.0.1:6379' }).redis;
    const sentinel = loadConfig({ ...base, REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'x' }).redis;
    const cluster = loadConfig({ ...base, REDIS_CLUSTER_NODES: 'a:6379' }).redis;
    for (const target of [url, sentinel]) {
      expect(queueKeyPrefix(target, 'mp')).toBe('mp');
      expect(keyspacePrefix(target, 'mp', 'admission', 'mp:')).toBe('mp:');
    }
    expect(queueKeyPrefix(cluster, 'mp')).toBe('{mp}');
    expect(keyspacePrefix(cluster, 'mp', 'admission', 'mp:')).toBe('{mp:admission}:');
    expect(keyspacePrefix(cluster, 'mp', 'admission', '')).toBe('{mp:admission}:');
  });
});
