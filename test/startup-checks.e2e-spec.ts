import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { runCli } from '../apps/cli/src/main';
import { createApiApp } from '../apps/api/src/create-api-app';
import { type TestApi, post, signed, startTestApi } from './helpers/api';
import { createEmptyTestDatabase, createTestDatabase } from './helpers/database';
import { freePort } from './helpers/free-port';
import { launch, stopProcess } from './helpers/processes';
import { TEST_REDIS_URL, testConfig } from './helpers/config';
import { testQueuePrefix } from './helpers/redis-keys';

const API_MAIN = resolve(__dirname, '../dist/apps/api/src/main.js');
const WORKER_MAIN = resolve(__dirname, '../dist/apps/worker/src/main.js');

const newKey = (): string => randomBytes(32).toString('base64');

/** Starts a compiled app that must refuse: its exit code and its output, line by line. */
async function refusedStart(main: string, env: Record<string, string>): Promise<{ code: number | null; lines: string[] }> {
  const port = await freePort();
  const running = launch('app', main, {
    PORT: String(port),
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: testQueuePrefix(),
    WORKER_HEALTH_FILE: `/tmp/mp-test-health-${port}`,
    ...env,
  });
  const timer = setTimeout(() => void stopProcess(running), 30_000);
  const exit = await running.exited;
  clearTimeout(timer);
  return { code: exit.code, lines: running.output().split('\n').filter(Boolean) };
}

/** Every line is one JSON object (a log collector reads each), and exactly one says why. */
function expectOneJsonLineSaying(lines: string[], why: RegExp): void {
  for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
  const fatal = lines.map((line) => JSON.parse(line) as { level: number; msg: string }).filter((entry) => entry.level >= 50);
  expect(fatal).toHaveLength(1);
  expect(fatal[0].msg).toMatch(why);
}

async function cli(env: Record<string, string>, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { env: { LOG_LEVEL: 'silent', ...env }, stdout: (t) => (out += t), stderr: (t) => (err += t) });
  return { code, out, err };
}

describe('an app refuses to start, with one clear line, rather than half-work', () => {
  let api: TestApi;

  beforeAll(async () => {
    // The first app on a database seals its check value with the key it was given.
    api = await startTestApi();
  });

  afterAll(async () => {
    await api.close();
  });

  it.each([
    ['worker', WORKER_MAIN],
    ['API', API_MAIN],
  ])("the %s with a master key that is not the database's", async (_name, main) => {
    const started = await refusedStart(main, { DATABASE_URL: api.databaseUrl, MASTER_KEY: newKey() });
    expect(started.code).toBe(1);
    expectOneJsonLineSaying(started.lines, /master key does not open this database.*MASTER_KEYS=new,old/);
  });

  it.each([
    ['worker', WORKER_MAIN],
    ['API', API_MAIN],
  ])('the %s on a database no migration has run on', async (_name, main) => {
    const started = await refusedStart(main, { DATABASE_URL: await createEmptyTestDatabase(), MASTER_KEY: newKey() });
    expect(started.code).toBe(1);
    expectOneJsonLineSaying(started.lines, /schema is behind this build .*migration:run/);
  });

  it.each([
    ['worker', WORKER_MAIN],
    ['API', API_MAIN],
  ])('the %s with a database that does not answer: the cause, not 130 lines of Nest', async (_name, main) => {
    const closed = await freePort();
    const started = await refusedStart(main, { DATABASE_URL: `postgres://postgres@127.0.0.1:${closed}/nothing`, MASTER_KEY: newKey() });
    expect(started.code).toBe(1);
    expectOneJsonLineSaying(started.lines, /cannot start: .*ECONNREFUSED/);
    expect(started.lines.length).toBeLessThanOrEqual(3);
  });

  it('the CLI with a wrong key says so instead of sealing new secrets no app could open', async () => {
    const result = await cli({ DATABASE_URL: api.databaseUrl, MASTER_KEY: newKey() }, 'merchant:create', '--name', 'Sealed wrong');
    expect(result.code).toBe(2);
    expect(result.err).toMatch(/^error: the master key does not open this database/);
    expect(result.out).toBe('');
  });
});

describe('master key rotation: MASTER_KEYS=new,old, keys:reseal, then the new key alone', () => {
  it('keeps every merchant working and makes the old key unnecessary', async () => {
    const databaseUrl = await createTestDatabase();
    const oldKey = newKey();
    const freshKey = newKey();
    const before = JSON.parse(
      (await cli({ DATABASE_URL: databaseUrl, MASTER_KEY: oldKey }, 'merchant:create', '--name', 'Rotating', '--mode', 'test')).out,
    ) as {
      api_key: string;
      api_secret: string;
    };

    // The new key alone cannot open what the old one sealed: refused before it writes anything.
    expect((await cli({ DATABASE_URL: databaseUrl, MASTER_KEY: freshKey }, 'merchant:balance', '--merchant', '1')).err).toMatch(/master key does not open/);

    const resealed = await cli({ DATABASE_URL: databaseUrl, MASTER_KEYS: `${freshKey},${oldKey}` }, 'keys:reseal');
    expect(resealed.code).toBe(0);
    const report = JSON.parse(resealed.out) as { resealed: Record<string, number>; current: number };
    expect(report.resealed).toMatchObject({ merchant_secret: 1, master_key_check: 1 });
    const again = JSON.parse((await cli({ DATABASE_URL: databaseUrl, MASTER_KEYS: `${freshKey},${oldKey}` }, 'keys:reseal')).out) as {
      resealed: Record<string, number>;
    };
    expect(Object.values(again.resealed).every((n) => n === 0)).toBe(true);

    // Now the old key alone is refused and the new one alone serves the merchant's signed requests.
    expect((await cli({ DATABASE_URL: databaseUrl, MASTER_KEY: oldKey }, 'merchant:balance', '--merchant', '1')).err).toMatch(/master key does not open/);
    const app = await createApiApp(testConfig(databaseUrl, { MASTER_KEY: freshKey }));
    try {
      const answer = await post(app, '/api/merchant/getPayChannels', signed(before));
      expect(answer.body).toMatchObject({ code: 1 });
    } finally {
      await app.close();
    }
  });
});
