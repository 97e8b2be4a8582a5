import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { CallbackFixtures, CallbackReceiver, waitFor } from './helpers/callbacks';
import { freePort } from './helpers/free-port';
import { type Running, launch, stopProcess } from './helpers/processes';

const WORKER_MAIN = resolve(__dirname, '../dist/apps/worker/src/main.js');

interface LogLine {
  level: number;
  msg: string;
  context?: string;
}

/** Every line the process wrote, each parsed as JSON (a line that is not JSON fails the test). */
function jsonLines(running: Running): LogLine[] {
  return running
    .output()
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      try {
        return JSON.parse(line) as LogLine;
      } catch {
        throw new Error(`not a JSON line: ${line}`);
      }
    });
}

describe('a worker whose Redis does not answer takes no work, says so in JSON, and stops at once', () => {
  let api: TestApi;
  let db: CallbackFixtures;
  let receiver: CallbackReceiver;
  let worker: Running | null = null;
  const healthFile = `/tmp/mp-test-gate-health-${process.pid}`;

  beforeAll(async () => {
    if (!existsSync(WORKER_MAIN)) throw new Error(`${WORKER_MAIN} is missing: run npm run build first (npm test does)`);
    api = await startTestApi({ CALLBACK_ALLOW_PRIVATE: 'true' });
    db = await CallbackFixtures.connect(api.databaseUrl);
    receiver = await CallbackReceiver.start();
  });

  afterAll(async () => {
    if (worker) await stopProcess(worker);
    await receiver?.close();
    await db?.close();
    await api?.close();
    rmSync(healthFile, { force: true });
  });

  it('claims no due delivery, logs the Redis error a bounded number of times, and exits 0 on SIGTERM within seconds', async () => {
    const { merchant, channels } = await merchantWithChannels(api.operator, { notifyUrl: `${receiver.url}/notify` });
    const { orderId } = await db.insertOrder(merchant.id, channels.processor);
    const { deliveryId } = await db.insertEvent(orderId);

    const closed = await freePort();
    worker = launch('worker', WORKER_MAIN, {
      DATABASE_URL: api.databaseUrl,
      REDIS_URL: `redis://127.0.0.1:${closed}`,
      MASTER_KEY: api.config.masterKey.toString('base64'),
      QUEUE_PREFIX: api.config.queuePrefix,
      CALLBACK_ALLOW_PRIVATE: 'true',
      WORKER_HEALTH_FILE: healthFile,
      LOG_LEVEL: 'debug',
    });
    const running = worker;

    // The sign of progress: it has retried Redis several times (one debug line per reconnection).
    const retries = (): number => jsonLines(running).filter((l) => /Redis.*reconnecting/.test(l.msg)).length;
    await waitFor(() => retries() >= 5, 30_000, 'five reconnections to Redis');

    const lines = jsonLines(running);
    const redisErrors = lines.filter((l) => l.level >= 40 && /ECONNREFUSED/.test(l.msg));
    expect(redisErrors.length).toBeGreaterThanOrEqual(1);
    expect(redisErrors.length).toBeLessThanOrEqual(3);
    expect(lines.some((l) => /taking jobs/.test(l.msg))).toBe(false);

    // Nothing was claimed or attempted: the delivery is as the outbox wrote it.
    expect(receiver.received).toHaveLength(0);
    expect(await db.attempts(deliveryId)).toHaveLength(0);
    expect(await db.delivery(deliveryId)).toMatchObject({ status: 'pending', attempts_made: 0 });
    expect(existsSync(healthFile)).toBe(false);

    const signalled = Date.now();
    running.child.kill('SIGTERM');
    const exit = await running.exited;
    expect(exit.at - signalled).toBeLessThan(5_000);
    // Stopped before it took any work: a clean stop, exit code 0.
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(() => jsonLines(running)).not.toThrow();
  }, 60_000);

  it('starts taking work once Redis answers, and says so', async () => {
    const port = await freePort();
    const waiting = launch('worker', WORKER_MAIN, {
      DATABASE_URL: api.databaseUrl,
      REDIS_URL: `redis://127.0.0.1:${port}`,
      MASTER_KEY: api.config.masterKey.toString('base64'),
      QUEUE_PREFIX: api.config.queuePrefix,
      WORKER_HEALTH_FILE: healthFile,
      LOG_LEVEL: 'info',
    });
    worker = waiting;
    await waitFor(() => jsonLines(waiting).some((l) => /Redis does not answer: .*ECONNREFUSED/.test(l.msg)), 30_000, 'the Redis error line');
    expect(jsonLines(waiting).some((l) => /taking jobs/.test(l.msg))).toBe(false);

    const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    try {
      await waitFor(() => jsonLines(waiting).some((l) => /taking jobs/.test(l.msg)), 30_000, 'the worker taking jobs');
      expect(jsonLines(waiting).some((l) => /Redis answers again/.test(l.msg))).toBe(true);
      await waitFor(() => existsSync(healthFile), 10_000, 'the heartbeat');
      const exit = await stopProcess(waiting);
      expect(exit).toMatchObject({ code: 0, signal: null });
    } finally {
      redis.kill('SIGTERM');
      await new Promise((done) => (redis.exitCode === null ? redis.once('exit', done) : done(null)));
    }
  }, 60_000);
});
