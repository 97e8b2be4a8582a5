import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import { databaseUrl, testDatabases, testRunId } from './database';

// Relative imports only: jest's globalTeardown does not apply moduleNameMapper.

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * What a test leaves in a Redis shared with other runs: BullMQ, rate-limit and auth-failure keys
 * under its QUEUE_PREFIX, and used nonces (`nonce:<api_key>:<nonce>`, no prefix: their TTL is
 * the production format) of the merchants it created. Each is removed by whoever made it.
 */
export function testQueuePrefix(): string {
  return `mp-test-${testRunId()}-${randomBytes(4).toString('hex')}`;
}

async function deleteMatching(redis: Redis, pattern: string, keep: (key: string) => boolean = () => true): Promise<number> {
  let deleted = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    const mine = keys.filter(keep);
    if (mine.length > 0) deleted += await redis.del(...mine);
  } while (cursor !== '0');
  return deleted;
}

async function withRedis<T>(fn: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true });
  await redis.connect();
  try {
    return await fn(redis);
  } finally {
    await redis.quit();
  }
}

/** The api keys of the merchants in one test database; none when it is gone or was never migrated. */
async function apiKeysIn(url: string): Promise<string[]> {
  const client = new Client({ connectionString: url });
  try {
    await client.connect();
    const { rows } = await client.query<{ api_key: string }>(`SELECT api_key FROM merchants`);
    return rows.map((r) => r.api_key);
  } catch {
    return [];
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function deleteNonces(redis: Redis, apiKeys: string[]): Promise<number> {
  if (apiKeys.length === 0) return 0;
  const owners = new Set(apiKeys);
  return deleteMatching(redis, 'nonce:*', (key) => owners.has(key.split(':')[1]));
}

/** One test's keys: those under its queue prefix, and the nonces of the merchants in its database. */
export function removeTestKeys(queuePrefix: string, testDatabaseUrl?: string): Promise<number> {
  return withRedis(async (redis) => {
    const nonces = testDatabaseUrl ? await deleteNonces(redis, await apiKeysIn(testDatabaseUrl)) : 0;
    return nonces + (await deleteMatching(redis, `${queuePrefix}:*`));
  });
}

/** The net under a spec that failed before its own cleanup: every key of this run, and only of this run. */
export async function removeRunKeys(): Promise<number> {
  const apiKeys = (await Promise.all((await testDatabases()).map((name) => apiKeysIn(databaseUrl(name))))).flat();
  return withRedis(async (redis) => (await deleteNonces(redis, apiKeys)) + (await deleteMatching(redis, `mp-test-${testRunId()}-*`)));
}
