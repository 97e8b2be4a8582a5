import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from './config';

const base = {
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/x',
  REDIS_URL: 'redis://127.0.0.1:6379',
  MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
};

function failure(env: Record<string, string>): string {
  try {
    loadConfig({ ...base, ...env });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).variable;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the defaults of the contract', () => {
    const c = loadConfig(base);
    expect(c.port).toBe(3000);
    expect(c.apiPrefix).toBe('/api');
    expect(c.authToleranceSeconds).toBe(300);
    expect(c.orderExpireSeconds).toBe(1800);
    expect(c.callbackRetryScheduleMs).toHaveLength(15);
    expect(c.callbackRetryScheduleMs[4]).toBe(10 * 60_000);
    expect(c.callbackAllowPrivate).toBe(false);
    expect([c.callbackDestinationConcurrency, c.callbackCircuitFailures, c.callbackCircuitProbeSeconds]).toEqual([8, 20, 60]);
    expect(c.workerMetricsPort).toBe(0);
    expect([c.sandboxEnabled, c.channelAllowHttp]).toEqual([false, false]);
    expect([c.rateLimitMerchantPerSecond, c.rateLimitMerchantBurst, c.rateLimitIpPerSecond]).toEqual([50, 100, 200]);
    expect(c.publicBaseUrl).toBe('http://127.0.0.1:3000');
    expect([c.queueBackend, c.portalSigninPerMinute, c.statementTimeoutMs]).toEqual(['redis', 20, 30_000]);
  });

  it('runs the queues on Redis unless QUEUE_BACKEND=postgres says otherwise: no REDIS_URL is refused, not a quiet switch', () => {
    expect(failure({ REDIS_URL: '' })).toBe('REDIS_URL');
    expect(() => loadConfig({ ...base, REDIS_URL: '' })).toThrow(/^REDIS_URL: is required .*QUEUE_BACKEND=postgres/);
    expect(failure({ REDIS_URL: '', QUEUE_BACKEND: 'redis' })).toBe('REDIS_URL');
    expect(failure({ QUEUE_BACKEND: 'bullmq' })).toBe('QUEUE_BACKEND');
    const embedded = loadConfig({ ...base, REDIS_URL: '', QUEUE_BACKEND: 'postgres' });
    expect([embedded.queueBackend, embedded.redisUrl]).toEqual(['postgres', null]);
    // Redis may still carry nonces and rate limits while the queues are on PostgreSQL.
    expect(loadConfig({ ...base, QUEUE_BACKEND: 'postgres' }).queueBackend).toBe('postgres');
  });

  it('reads the callback fairness variables', () => {
    const c = loadConfig({
      ...base,
      CALLBACK_DESTINATION_CONCURRENCY: '2',
      CALLBACK_CIRCUIT_FAILURES: '5',
      CALLBACK_CIRCUIT_PROBE_SECONDS: '1',
      WORKER_METRICS_PORT: '9464',
    });
    expect([c.callbackDestinationConcurrency, c.callbackCircuitFailures, c.callbackCircuitProbeSeconds, c.workerMetricsPort]).toEqual([2, 5, 1, 9464]);
  });

  it('keeps 90 days of callback history unless RETENTION_DAYS says otherwise', () => {
    expect([loadConfig(base).retentionDays, loadConfig({ ...base, RETENTION_DAYS: '30' }).retentionDays]).toEqual([90, 30]);
  });

  it('reads CALLBACK_EGRESS_ADDRESSES as free text, trimmed; unset or blank is unpublished', () => {
    expect(loadConfig({ ...base, CALLBACK_EGRESS_ADDRESSES: ' 203.0.113.10, 2001:db8::10 ' }).callbackEgressAddresses).toBe('203.0.113.10, 2001:db8::10');
    expect([loadConfig(base).callbackEgressAddresses, loadConfig({ ...base, CALLBACK_EGRESS_ADDRESSES: '  ' }).callbackEgressAddresses]).toEqual([null, null]);
  });

  it('reads a compressed retry schedule', () => {
    expect(loadConfig({ ...base, CALLBACK_RETRY_SCHEDULE: '200ms,1s,2m' }).callbackRetryScheduleMs).toEqual([200, 1000, 120000]);
  });

  it.each([
    [{ DATABASE_URL: '' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ MASTER_KEY: '' }, 'MASTER_KEY'],
    [{ SANDBOX_ENABLED: 'yes' }, 'SANDBOX_ENABLED'],
    [{ CHANNEL_ALLOW_HTTP: 'maybe' }, 'CHANNEL_ALLOW_HTTP'],
    [{ MASTER_KEY: Buffer.alloc(16).toString('base64') }, 'MASTER_KEY'],
    [{ MASTER_KEY: 'not base64 at all!' }, 'MASTER_KEY'],
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ REDIS_URL: 'http://x' }, 'REDIS_URL'],
    [{ API_PREFIX: 'api' }, 'API_PREFIX'],
    [{ PUBLIC_BASE_URL: 'ftp://x' }, 'PUBLIC_BASE_URL'],
    [{ AUTH_TOLERANCE_SECONDS: '-1' }, 'AUTH_TOLERANCE_SECONDS'],
    [{ ORDER_EXPIRE_SECONDS: '1.5' }, 'ORDER_EXPIRE_SECONDS'],
    [{ CALLBACK_RETRY_SCHEDULE: '15s,soon' }, 'CALLBACK_RETRY_SCHEDULE'],
    [{ CALLBACK_ALLOW_PRIVATE: 'maybe' }, 'CALLBACK_ALLOW_PRIVATE'],
    [{ CALLBACK_DESTINATION_CONCURRENCY: '0' }, 'CALLBACK_DESTINATION_CONCURRENCY'],
    [{ CALLBACK_CIRCUIT_FAILURES: 'twenty' }, 'CALLBACK_CIRCUIT_FAILURES'],
    [{ CALLBACK_CIRCUIT_PROBE_SECONDS: '0' }, 'CALLBACK_CIRCUIT_PROBE_SECONDS'],
    [{ WORKER_METRICS_PORT: '70000' }, 'WORKER_METRICS_PORT'],
    [{ RETENTION_DAYS: '0' }, 'RETENTION_DAYS'],
    [{ RETENTION_DAYS: '90d' }, 'RETENTION_DAYS'],
    [{ RATE_LIMIT_MERCHANT_PER_SECOND: '0' }, 'RATE_LIMIT_MERCHANT_PER_SECOND'],
    [{ RATE_LIMIT_MERCHANT_BURST: 'x' }, 'RATE_LIMIT_MERCHANT_BURST'],
    [{ RATE_LIMIT_IP_PER_SECOND: '0' }, 'RATE_LIMIT_IP_PER_SECOND'],
    [{ RATE_LIMIT_IP_PER_SECOND: 'many' }, 'RATE_LIMIT_IP_PER_SECOND'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ LOG_FORMAT: 'xml' }, 'LOG_FORMAT'],
    [{ LOG_FORMAT: 'JSON' }, 'LOG_FORMAT'],
    [{ TRUST_PROXY: 'maybe' }, 'TRUST_PROXY'],
  ])('names the bad variable in %p', (env, variable) => {
    expect(failure(env)).toBe(variable);
  });

  it('refuses with one line that starts with the variable', () => {
    for (const [name, value] of [
      ['TRUST_PROXY', 'maybe'],
      ['LOG_FORMAT', 'xml'],
      ['RATE_LIMIT_IP_PER_SECOND', '0'],
    ]) {
      expect(() => loadConfig({ ...base, [name]: value })).toThrow(new RegExp(`^${name}: [^\\n]+$`));
    }
  });

  it('reads RATE_LIMIT_IP_PER_SECOND and LOG_FORMAT', () => {
    const c = loadConfig({ ...base, RATE_LIMIT_IP_PER_SECOND: '7', LOG_FORMAT: 'pretty' });
    expect([c.rateLimitIpPerSecond, c.logFormat]).toEqual([7, 'pretty']);
    expect(loadConfig(base).logFormat).toBe('json');
  });
});

describe('TRUST_PROXY', () => {
  it('defaults to no proxy', () => {
    expect(loadConfig(base).trustProxy).toBe(false);
  });

  it.each([
    ['false', false],
    ['0', false],
    ['1', 1],
    ['2', 2],
    ['10.0.0.0/8', ['10.0.0.0/8']],
    ['10.0.0.7, 192.168.0.0/16,fd00:ab::/32, loopback', ['10.0.0.7', '192.168.0.0/16', 'fd00:ab::/32', 'loopback']],
    ['2001:db8::1,::ffff:10.0.0.0/104', ['2001:db8::1', '::ffff:10.0.0.0/104']],
  ])('reads TRUST_PROXY=%p as hops or proxy addresses', (raw, expected) => {
    expect(loadConfig({ ...base, TRUST_PROXY: raw }).trustProxy).toEqual(expected);
  });

  it.each(['true', 'TRUE', 'yes', '-1', '1.5', '10.0.0.0/33', '10.0.0.0/8,', 'fd00::/129', '10.0.0.1/8/1', 'proxy.internal', '*'])(
    'refuses TRUST_PROXY=%p at start, naming the variable',
    (raw) => {
      expect(failure({ TRUST_PROXY: raw })).toBe('TRUST_PROXY');
    },
  );

  // SPEC 10: wider than /8 (IPv4) or /32 (IPv6) trusts whole swathes of the internet to name their own address.
  it.each([
    '0.0.0.0/1,128.0.0.0/1',
    '0.0.0.0/0',
    '10.0.0.0/7',
    '10.0.0.7,1.0.0.0/4',
    '::/0',
    '::/1',
    'fd00::/8',
    '2001:db8::/31',
    '::ffff:0:0/96',
    '::ffff:10.0.0.0/103',
    'uniquelocal',
    'linklocal',
  ])('refuses the range TRUST_PROXY=%p with one line saying it is too wide', (raw) => {
    expect(() => loadConfig({ ...base, TRUST_PROXY: raw })).toThrow(/^TRUST_PROXY: [^\n]*wider than \/(8|32)[^\n]*$/);
  });

  it('names the entry that is too wide and the limit of its family', () => {
    expect(() => loadConfig({ ...base, TRUST_PROXY: '10.0.0.7,0.0.0.0/0' })).toThrow(
      'TRUST_PROXY: must be a number of proxy hops or a comma list of proxy addresses/CIDRs: "0.0.0.0/0" is wider than /8 (IPv4)',
    );
    expect(() => loadConfig({ ...base, TRUST_PROXY: 'fd00::/8' })).toThrow('"fd00::/8" is wider than /32 (IPv6)');
    expect(() => loadConfig({ ...base, TRUST_PROXY: '::ffff:0:0/96' })).toThrow('"::ffff:0:0/96" is wider than /8 (IPv4)');
  });

  it('says why true is refused', () => {
    expect(() => loadConfig({ ...base, TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY: .*choose its own address/);
  });
});

describe('RATE_LIMIT_AUTH_FAIL_PER_SECOND', () => {
  it('defaults to 20', () => {
    expect(loadConfig(base).rateLimitAuthFailPerSecond).toBe(20);
  });

  it.each(['0', 'many', '2.5'])('refuses %p', (raw) => {
    expect(failure({ RATE_LIMIT_AUTH_FAIL_PER_SECOND: raw })).toBe('RATE_LIMIT_AUTH_FAIL_PER_SECOND');
  });
});

describe('METRICS_TOKEN', () => {
  it('is off unless set', () => {
    expect(loadConfig(base).metricsToken).toBeNull();
    expect(loadConfig({ ...base, METRICS_TOKEN: '' }).metricsToken).toBeNull();
    expect(loadConfig({ ...base, METRICS_TOKEN: 'tok' }).metricsToken).toBe('tok');
  });
});

describe('the master key ring', () => {
  const key = (fill: number) => Buffer.alloc(32, fill);
  const b64 = (fill: number) => key(fill).toString('base64');
  const { MASTER_KEY: _unused, ...noKey } = base;

  it('takes MASTER_KEYS new first, old after, the first sealing', () => {
    const c = loadConfig({ ...noKey, MASTER_KEYS: `${b64(1)}, ${b64(2)}` });
    expect(c.masterKeys).toEqual([key(1), key(2)]);
    expect(c.masterKey).toEqual(key(1));
  });

  it('reads MASTER_KEY_FILE, one key or a ring, as a mounted secret', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mk-'));
    writeFileSync(join(dir, 'one'), `${b64(3)}\n`);
    writeFileSync(join(dir, 'ring'), `${b64(4)}\n${b64(5)}\n`);
    expect(loadConfig({ ...noKey, MASTER_KEY_FILE: join(dir, 'one') }).masterKeys).toEqual([key(3)]);
    expect(loadConfig({ ...noKey, MASTER_KEY_FILE: join(dir, 'ring') }).masterKeys).toEqual([key(4), key(5)]);
    expect(failure({ MASTER_KEY: '', MASTER_KEY_FILE: join(dir, 'missing') })).toBe('MASTER_KEY_FILE');
  });

  it.each([
    [{ MASTER_KEYS: b64(1) }, 'MASTER_KEYS'],
    [{ MASTER_KEY: `${b64(1)},${b64(2)}` }, 'MASTER_KEY'],
    [{ MASTER_KEY: '', MASTER_KEYS: `${b64(1)},${b64(1)}` }, 'MASTER_KEYS'],
    [{ MASTER_KEY: '', MASTER_KEYS: `${b64(1)},short` }, 'MASTER_KEYS'],
  ])('refuses %j naming %s', (env, variable) => {
    expect(failure(env)).toBe(variable);
  });
});

describe('DATABASE_POOL_SIZE', () => {
  it("is each app's own default unless set", () => {
    expect(loadConfig(base).databasePoolSize).toBeNull();
    expect(loadConfig({ ...base, DATABASE_POOL_SIZE: '25' }).databasePoolSize).toBe(25);
  });

  it.each(['1', '0', 'ten', '1001'])('refuses %s with the variable named', (value) => {
    expect(() => loadConfig({ ...base, DATABASE_POOL_SIZE: value })).toThrow(/^DATABASE_POOL_SIZE: must be an integer from 2 to 1000/);
  });
});

describe('DATABASE_DIRECT_URL and DATABASE_REPLICA_URL (SPEC 10)', () => {
  it('without them, everything on DATABASE_URL, not pooled, no replica', () => {
    const config = loadConfig(base);
    expect(config).toMatchObject({ databaseDirectUrl: base.DATABASE_URL, databasePooled: false, databaseReplicaUrl: null });
  });

  it('a DATABASE_DIRECT_URL apart from DATABASE_URL says DATABASE_URL is a pooler', () => {
    const config = loadConfig({ ...base, DATABASE_URL: 'postgres://app@pgbouncer:6432/x', DATABASE_DIRECT_URL: 'postgres://app@db:5432/x' });
    expect(config).toMatchObject({ databaseUrl: 'postgres://app@pgbouncer:6432/x', databaseDirectUrl: 'postgres://app@db:5432/x', databasePooled: true });
    expect(loadConfig({ ...base, DATABASE_DIRECT_URL: base.DATABASE_URL }).databasePooled).toBe(false);
  });

  it.each([
    [{ DATABASE_DIRECT_URL: 'mysql://x' }, 'DATABASE_DIRECT_URL'],
    [{ DATABASE_REPLICA_URL: 'not a url' }, 'DATABASE_REPLICA_URL'],
  ])('refuses %j naming %s', (env, variable) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(new RegExp(`^${variable}: `));
  });
});
