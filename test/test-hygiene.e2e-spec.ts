import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
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

/**
 * Specs wait on a sign of progress, never a fixed time, and assert behaviour, not speed (figures
 * live in bench/, as ratios). A fixed wait stays only with a comment on the line before, or on
 * the same line, saying which kind it is and why:
 *   `// absence check: ...`  nothing more happens (a duplicate, a retry) and nothing would show it sooner;
 *   `// clock: ...`          the behaviour is defined by the wall clock itself (a rate, a window, a grace).
 */
describe('test hygiene: waits and timings', () => {
  const TEST_DIR = __dirname;
  const MARKER = /\/\/ (absence check|clock): \S/;
  /** A call that waits a fixed time: sleep(...), sleepUntil(...), or a promise resolved by a timer. */
  const FIXED_WAIT = /\bsleep(Until)?\(|setTimeout\(\s*(r|resolve|done)\s*[,)]|setTimeout\(\(\)\s*=>\s*(r|resolve|done)\(\)/;
  /** An expectation on how long something took, as measured by the spec itself. */
  const TIMING_ASSERTION = /expect\((?:[^;]*?\bDate\.now\(\)\s*-|[^;]*?(?:latenc|elapsed|took|duration|Within)\w*)[^;]*?\)\s*\.toBeLessThan(?:OrEqual)?\(/;

  function specFiles(): string[] {
    return readdirSync(TEST_DIR)
      .filter((name) => /\.(e2e-)?spec\.ts$/.test(name) && name !== 'test-hygiene.e2e-spec.ts')
      .map((name) => `${TEST_DIR}/${name}`);
  }

  function findings(file: string, text: string): string[] {
    const lines = text.split('\n');
    const found: string[] = [];
    lines.forEach((line, i) => {
      const code = line.replace(/\/\/.*$/, '');
      if (/^\s*(\*|\/\*)/.test(line)) return;
      if (FIXED_WAIT.test(code) && !MARKER.test(line) && !MARKER.test(lines[i - 1] ?? ''))
        found.push(`${file}:${i + 1}: fixed wait without "// absence check:" or "// clock:": ${line.trim()}`);
    });
    const flat = text.replace(/\n\s*/g, ' ');
    const timing = TIMING_ASSERTION.exec(flat);
    if (timing) found.push(`${file}: timing assertion (move the figure to bench/): ${timing[0].slice(0, 120)}`);
    return found;
  }

  it('no spec waits a fixed time without saying why, nor asserts a duration', () => {
    const all = specFiles().flatMap((file) => findings(file.slice(TEST_DIR.length + 1), readFileSync(file, 'utf8')));
    expect(all).toEqual([]);
  });

  it('catches a bare sleep, a bare timer wait and a duration assertion, and lets a marked absence check pass', () => {
    expect(findings('x.ts', `await sleep(500);\nexpect(x).toBe(1);`)).toHaveLength(1);
    expect(findings('x.ts', `await new Promise((r) => setTimeout(r, 500));`)).toHaveLength(1);
    expect(findings('x.ts', `const since = Date.now();\nawait go();\nexpect(Date.now() - since).toBeLessThan(1000);`)).toHaveLength(1);
    expect(findings('x.ts', `expect(latencies.at(-1)).toBeLessThan(2000);`)).toHaveLength(1);
    expect(findings('x.ts', `// absence check: a duplicate would come by now\nawait sleep(500);`)).toEqual([]);
    expect(findings('x.ts', `await sleep(1100); // clock: the bucket refills`)).toEqual([]);
    expect(
      findings('x.ts', `jest.setTimeout(60_000);\nconst t = setTimeout(() => fail(new Error('x')), 5000);\nawait pg.query('SELECT pg_sleep(2)');`),
    ).toEqual([]);
  });
});
