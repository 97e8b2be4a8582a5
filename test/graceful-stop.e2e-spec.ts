import { randomInt } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import { type AddressInfo, type Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { OrderLifecycle } from '@app/orders';
import { type TestApi, merchantWithChannels, signed, startTestApi } from './helpers/api';
import { CallbackFixtures, flushQueueKeys, sleep, waitFor } from './helpers/callbacks';
import { freePort } from './helpers/free-port';
import { type Running, launch, runHealthCheck, stopProcess } from './helpers/processes';

const API_MAIN = resolve(__dirname, '../dist/apps/api/src/main.js');
const WORKER_MAIN = resolve(__dirname, '../dist/apps/worker/src/main.js');

interface Arrival {
  eventId: string;
  receivedAt: number;
  answeredAt: number | null;
}

/** A merchant endpoint that takes 1 to 2 s to answer each callback, and records when each came and was answered. */
class SlowReceiver {
  readonly arrivals: Arrival[] = [];
  private server: Server;

  static async start(): Promise<SlowReceiver> {
    const receiver = new SlowReceiver();
    receiver.server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        const arrival: Arrival = { eventId: (JSON.parse(raw) as { event_id: string }).event_id, receivedAt: Date.now(), answeredAt: null };
        receiver.arrivals.push(arrival);
        setTimeout(
          () => {
            res.end('success');
            arrival.answeredAt = Date.now();
          },
          randomInt(1000, 2000),
        );
      });
    });
    await new Promise<void>((done) => receiver.server.listen(0, '127.0.0.1', done));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/notify`;
  }

  count(eventId: string): number {
    return this.arrivals.filter((a) => a.eventId === eventId).length;
  }

  /** Attempts the merchant had received but not yet answered at `at`. */
  inFlightAt(at: number): Set<string> {
    return new Set(this.arrivals.filter((a) => a.receivedAt <= at && (a.answeredAt === null || a.answeredAt > at)).map((a) => a.eventId));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((done) => this.server.close(done));
  }
}

/** Resolves true once a new TCP connection to `port` is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code === 'ECONNREFUSED'));
  });
}

/** One raw HTTP/1.1 exchange on `socket`: the status and the body, read by content-length. */
function readResponse(socket: Socket): Promise<{ status: number; body: string }> {
  return new Promise((done, fail) => {
    let raw = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      raw = Buffer.concat([raw, chunk]);
      const head = raw.indexOf('\r\n\r\n');
      if (head < 0) return;
      const headers = raw.subarray(0, head).toString();
      const length = Number(/content-length: (\d+)/i.exec(headers)?.[1]);
      if (raw.length - head - 4 < length) return;
      done({ status: Number(headers.split(' ')[1]), body: raw.subarray(head + 4, head + 4 + length).toString() });
    });
    socket.once('error', fail);
    socket.once('close', () => fail(new Error(`connection closed before a whole answer: ${raw.toString()}`)));
  });
}

describe('graceful stop of the compiled API and worker (SIGTERM, as compose and Kubernetes send)', () => {
  let api: TestApi;
  let db: CallbackFixtures;
  let env: Record<string, string>;
  const processes: Running[] = [];
  const healthDir = mkdtempSync(join(tmpdir(), 'mp-graceful-'));

  beforeAll(async () => {
    for (const main of [API_MAIN, WORKER_MAIN]) if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first (npm test does)`);
    api = await startTestApi({ CALLBACK_ALLOW_PRIVATE: 'true' });
    db = await CallbackFixtures.connect(api.databaseUrl);
    env = {
      DATABASE_URL: api.databaseUrl,
      REDIS_URL: api.config.redisUrl!,
      MASTER_KEY: api.config.masterKey.toString('base64'),
      QUEUE_PREFIX: api.config.queuePrefix,
      CALLBACK_ALLOW_PRIVATE: 'true',
      SANDBOX_ENABLED: 'true',
      LOG_LEVEL: 'info',
    };
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => stopProcess(p)));
    await db?.close();
    await api?.close();
    if (api) await flushQueueKeys(api.config.queuePrefix);
    rmSync(healthDir, { recursive: true, force: true });
  }, 30_000);

  function start(name: string, main: string, extra: Record<string, string> = {}): Running {
    const running = launch(name, main, { ...env, ...extra });
    processes.push(running);
    return running;
  }

  it('the API: a request in flight at the signal gets its answer, new connections are refused, exit code 0', async () => {
    const { merchant } = await merchantWithChannels(api.operator);
    const port = await freePort();
    const server = start('api', API_MAIN, { PORT: String(port) });
    await waitFor(
      () =>
        fetch(`http://127.0.0.1:${port}/ready`).then(
          (r) => r.ok,
          () => false,
        ),
      30_000,
      'the API ready',
    );

    // In flight: the headers and part of the body are sent before the signal, the rest after it.
    const body = JSON.stringify(signed(merchant));
    const socket = connect(port, '127.0.0.1');
    await new Promise((done) => socket.once('connect', done));
    const answer = readResponse(socket);
    socket.write(
      `POST /api/merchant/getPayChannels HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
    );
    socket.write(body.slice(0, 20));
    // clock: the first bytes reach the server's socket before the stop; nothing observable says they did
    await sleep(300);
    server.child.kill('SIGTERM');

    await waitFor(() => refused(port), 5_000, 'new connections refused');
    socket.write(body.slice(20));
    const { status, body: answered } = await answer;
    expect(status).toBe(200);
    expect((JSON.parse(answered) as { code: number; data: { total: number } }).data.total).toBe(3);
    socket.destroy();

    const exit = await server.exited;
    expect(exit).toMatchObject({ code: 0, signal: null });
  }, 60_000);

  it('a worker stopped with 200 callbacks in flight or queued to a slow merchant exits within 15 s; the next worker delivers the rest, none twice beyond an attempt in flight at the signal', async () => {
    const receiver = await SlowReceiver.start();
    try {
      const { merchant, channels } = await merchantWithChannels(api.operator, { notifyUrl: receiver.url });
      const healthFile = { WORKER_HEALTH_FILE: join(healthDir, 'worker-1.health') };
      const first = start('worker-1', WORKER_MAIN, healthFile);
      await waitFor(() => first.output().includes('taking jobs'), 30_000, 'the first worker taking jobs');
      // Its container healthcheck passes once it beats.
      await waitFor(async () => (await runHealthCheck(WORKER_MAIN, { ...env, ...healthFile })).code === 0, 15_000, 'the worker healthy');

      // 200 cancellations, each writing its order.cancelled event and callback delivery as the API does.
      const lifecycle = api.app.get(OrderLifecycle);
      const orderIds: string[] = [];
      for (let i = 0; i < 200; i++) {
        const { orderId } = await db.insertOrder(merchant.id, channels.remotepay, { status: 'pending' });
        expect(await lifecycle.markClosedByChannel(orderId)).toBe(true);
        orderIds.push(orderId);
      }
      await waitFor(() => receiver.arrivals.length >= 40, 30_000, '40 callbacks at the merchant');

      const signalAt = Date.now();
      first.child.kill('SIGTERM');
      const exit = await first.exited;
      // Nothing else stops it: an exit of its own, cleanly.
      expect(exit).toMatchObject({ code: 0, signal: null });
      expect(first.output()).not.toMatch(/"level":(50|60)/);
      const pendingLeft = await pendingDeliveries(orderIds);
      // Otherwise the second worker has nothing to prove.
      expect(pendingLeft).toBeGreaterThan(0);
      expect(await runHealthCheck(WORKER_MAIN, { ...env, ...healthFile })).toMatchObject({ code: 1, stdout: expect.stringMatching(/no heartbeat/) });

      start('worker-2', WORKER_MAIN, { WORKER_HEALTH_FILE: join(healthDir, 'worker-2.health') });
      await waitFor(async () => (await pendingDeliveries(orderIds)) === 0, 60_000, 'every delivery settled');
      // absence check: a duplicate, if any, would come now.
      await sleep(2_500);

      const inFlight = receiver.inFlightAt(signalAt);
      for (const orderId of orderIds) {
        const [delivery] = await db.deliveriesOfOrder(orderId);
        expect(delivery).toMatchObject({ type: 'order.cancelled', status: 'succeeded' });
        const arrived = receiver.count(delivery.event_id);
        const attempts = await db.attempts(delivery.id);
        const retriedInFlight = inFlight.has(delivery.event_id) ? 1 : 0;
        expect(arrived).toBeGreaterThanOrEqual(1);
        expect(arrived).toBeLessThanOrEqual(1 + retriedInFlight);
        // The attempt log: one row per attempt that reached the merchant, the last one answered 200;
        // only an attempt in flight at the signal may have reached it without a row (handed back).
        expect(attempts.length).toBeGreaterThanOrEqual(1);
        expect(attempts.length).toBeLessThanOrEqual(arrived);
        expect(arrived - attempts.length).toBeLessThanOrEqual(retriedInFlight);
        expect(attempts.at(-1)).toMatchObject({ http_status: 200 });
      }
    } finally {
      await receiver.close();
    }
  }, 120_000);

  async function pendingDeliveries(orderIds: string[]): Promise<number> {
    const { rows } = await db.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM callback_deliveries WHERE order_id = ANY($1::bigint[]) AND status = 'pending'`,
      [orderIds],
    );
    return rows[0].n;
  }
});
