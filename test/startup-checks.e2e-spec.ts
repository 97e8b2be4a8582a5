import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { DataSource } from 'typeorm';
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

  it.each([
    ['worker', WORKER_MAIN],
    ['API', API_MAIN],
  ])('the %s with a bad variable: one JSON line naming it, nothing else', async (_name, main) => {
    const started = await refusedStart(main, { DATABASE_URL: api.databaseUrl, MASTER_KEY: newKey(), TRUST_PROXY: 'true' });
    expect(started.code).toBe(1);
    expect(started.lines).toHaveLength(1);
    expectOneJsonLineSaying(started.lines, /cannot start: configuration error: TRUST_PROXY: /);
    expect(JSON.parse(started.lines[0])).toMatchObject({ level: 60, variable: 'TRUST_PROXY' });
  });

  it('a worker without REDIS_URL beside an API on Redis refuses to start, whether QUEUE_BACKEND is missing or says postgres', async () => {
    // The API of this database started on Redis (startTestApi): the database records it.
    const unset = await refusedStart(WORKER_MAIN, { DATABASE_URL: api.databaseUrl, MASTER_KEY: api.config.masterKey.toString('base64'), REDIS_URL: '' });
    expect(unset.code).toBe(1);
    expectOneJsonLineSaying(unset.lines, /configuration error: REDIS_URL: is required .*QUEUE_BACKEND=postgres/);
    const other = await refusedStart(WORKER_MAIN, {
      DATABASE_URL: api.databaseUrl,
      MASTER_KEY: api.config.masterKey.toString('base64'),
      REDIS_URL: '',
      QUEUE_BACKEND: 'postgres',
    });
    expect(other.code).toBe(1);
    expectOneJsonLineSaying(other.lines, /QUEUE_BACKEND: this process would run its queues on postgres, but the database records redis/);
    expect(other.lines.join('\n')).not.toMatch(/taking jobs/);
  });

  it.each([
    ['worker', WORKER_MAIN, /--health/],
    ['API', API_MAIN, /merchant API/],
  ])('the %s answers --help with its help, exit 0, and starts nothing (no configuration needed)', async (_name, main, says) => {
    const running = launch('help', main, {}, ['--help']);
    const exit = await running.exited;
    expect(exit.code).toBe(0);
    expect(running.output()).toMatch(says);
    expect(running.output()).toMatch(/DATABASE_URL/);
    expect(running.output()).not.toMatch(/cannot start|"level"/);
  });

  it('the fatal line reaches the log, first, in 50 of 50 refused starts made side by side', async () => {
    const empty = await createEmptyTestDatabase();
    const mains = [API_MAIN, WORKER_MAIN];
    const problems: string[] = [];
    let next = 0;
    // Five starts at a time on this machine's cores: each start competes with four others for the CPU.
    const lane = async (): Promise<void> => {
      while (next < 50) {
        const i = next++;
        const started = await refusedStart(mains[i % 2], { DATABASE_URL: empty, MASTER_KEY: newKey() });
        const first = started.lines[0] ?? '';
        if (started.code !== 1 || !/"level":60.*schema is behind this build/.test(first))
          problems.push(`start ${i}: exit ${started.code}, first line ${first || '(none)'}`);
      }
    };
    await Promise.all(Array.from({ length: 5 }, lane));
    expect(problems).toEqual([]);
  }, 600_000);

  it('the fatal line is written whole before the exit even when the log collector lags and the pipe is full', async () => {
    // The process fills its stdout pipe until a write would block, then refuses to start; the collector
    // reading that pipe comes back a second later (`sleep 1; cat`), as a busy one does.
    const probe = `
      const { writeSync } = require('node:fs');
      const { exitOnStartupFailure } = require(${JSON.stringify(resolve(__dirname, '../dist/libs/common/src/startup.js'))});
      process.stdout; // the pipe handle, non-blocking from here on, as in every app
      // Big writes, then single bytes: a pipe takes a write of up to 4 KiB whole or not at all.
      for (const chunk of [Buffer.alloc(4096, 'x'), Buffer.from('x')]) {
        for (;;) {
          try { writeSync(1, chunk); } catch (err) { if (err.code === 'EAGAIN') break; throw err; }
        }
      }
      exitOnStartupFailure('Probe', new Error('the reason'));
    `;
    const collected = await new Promise<{ code: number | null; out: string }>((done) => {
      execFile('sh', ['-c', '"$0" -e "$1" | (sleep 1; cat)', process.execPath, probe], { maxBuffer: 1 << 20 }, (err, out) =>
        done({ code: err ? Number((err as { code?: number }).code) : 0, out }),
      );
    });
    expect(collected.out).toMatch(/\{"level":60,[^\n]*"msg":"Probe cannot start: the reason"\}\n$/);
  });

  it("ends an app's statement that runs longer (30 s unless set), so none holds its connection and locks for ever", async () => {
    const quick = await startTestApi({ DATABASE_STATEMENT_TIMEOUT_MS: '300' });
    try {
      const db = quick.app.get(DataSource);
      await expect(db.query('SELECT pg_sleep(2)')).rejects.toMatchObject({ driverError: { code: '57014' } });
      expect(await db.query('SHOW statement_timeout')).toEqual([{ statement_timeout: '300ms' }]);
      expect(await api.app.get(DataSource).query('SHOW statement_timeout')).toEqual([{ statement_timeout: '30s' }]);
    } finally {
      await quick.close();
    }
  });

  it('the CLI with a wrong key says so instead of sealing new secrets no app could open', async () => {
    const result = await cli({ DATABASE_URL: api.databaseUrl, MASTER_KEY: newKey() }, 'merchant:create', '--name', 'Sealed wrong');
    expect(result.code).toBe(2);
    expect(result.err).toMatch(/^error: the master key does not open this database/);
    expect(result.out).toBe('');
  });
});

describe('master key rotation: MASTER_KEYS=new,old, keys:reseal, then the new key alone', () => {
  it("rolling restarts: an instance on old,new opens what one on new,old sealed, one on the old key alone answers 50000 (RUNBOOK's order)", async () => {
    const databaseUrl = await createTestDatabase();
    const [oldKey, freshKey] = [newKey(), newKey()];
    expect((await cli({ DATABASE_URL: databaseUrl, MASTER_KEY: oldKey }, 'merchant:create', '--name', 'Before', '--mode', 'test')).code).toBe(0);
    // An instance already on the new ring seals a new secret with the new key.
    const sealedNew = JSON.parse(
      (await cli({ DATABASE_URL: databaseUrl, MASTER_KEYS: `${freshKey},${oldKey}` }, 'merchant:create', '--name', 'During', '--mode', 'test')).out,
    ) as {
      api_key: string;
      api_secret: string;
    };
    const answers: number[] = [];
    const rings: Record<string, string>[] = [{ MASTER_KEY: '', MASTER_KEYS: `${oldKey},${freshKey}` }, { MASTER_KEY: oldKey }];
    for (const env of rings) {
      const app = await createApiApp(testConfig(databaseUrl, env));
      try {
        answers.push((await post(app, '/api/merchant/getPayChannels', signed(sealedNew))).body.code);
      } finally {
        await app.close();
      }
    }
    expect(answers).toEqual([1, 50000]);
  });

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
