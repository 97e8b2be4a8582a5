import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import { createEmptyTestDatabase, dropTestDatabases, testDatabases } from './helpers/database';
import { TEST_REDIS_URL, removeRunKeys, testQueuePrefix } from './helpers/redis-keys';

/** Two runs side by side on one PostgreSQL and one Redis: each one's cleanup removes its own things only. */
describe('test cleanup', () => {
  const ownRun = process.env.MP_TEST_RUN;
  const runs = [`hyga${randomBytes(4).toString('hex')}`, `hygb${randomBytes(4).toString('hex')}`];
  const redis = new Redis(TEST_REDIS_URL);

  async function as<T>(run: string, fn: () => Promise<T>): Promise<T> {
    process.env.MP_TEST_RUN = run;
    try {
      return await fn();
    } finally {
      process.env.MP_TEST_RUN = ownRun;
    }
  }

  /** What a spec of `run` leaves: a database with one merchant, a nonce of that merchant, and a BullMQ key under its queue prefix. */
  async function leftovers(run: string): Promise<{ nonce: string; queueKey: string }> {
    const apiKey = `mk_test_${randomBytes(12).toString('hex')}`;
    const url = await as(run, createEmptyTestDatabase);
    const db = new Client({ connectionString: url });
    await db.connect();
    try {
      await db.query(`CREATE TABLE merchants (api_key text)`);
      await db.query(`INSERT INTO merchants VALUES ($1)`, [apiKey]);
    } finally {
      await db.end();
    }
    const nonce = `nonce:${apiKey}:${randomBytes(12).toString('hex')}`;
    const queueKey = `${await as(run, async () => testQueuePrefix())}:orders:meta`;
    await redis.set(nonce, '1', 'EX', 600);
    await redis.set(queueKey, '1', 'EX', 600);
    return { nonce, queueKey };
  }

  afterAll(async () => {
    for (const run of runs) {
      await as(run, async () => {
        await removeRunKeys();
        await dropTestDatabases();
      });
    }
    await redis.quit();
  });

  it("drops this run's databases and keys, and leaves another run's in place", async () => {
    const [mine, theirs] = [await leftovers(runs[0]), await leftovers(runs[1])];
    expect(await as(runs[0], testDatabases)).toHaveLength(1);

    await as(runs[0], async () => {
      expect(await removeRunKeys()).toBe(2);
      await dropTestDatabases();
    });

    expect(await as(runs[0], testDatabases)).toEqual([]);
    expect(await redis.exists(mine.nonce, mine.queueKey)).toBe(0);
    expect(await as(runs[1], testDatabases)).toHaveLength(1);
    expect(await redis.exists(theirs.nonce, theirs.queueKey)).toBe(2);
    expect(process.env.MP_TEST_RUN).toBe(ownRun);
  });
});
