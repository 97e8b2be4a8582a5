import { Client } from 'pg';
import { AppConfig } from '@app/common';
import { CallbackJobs } from '@app/callbacks';
import { OrderLifecycle } from '@app/orders';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { CallbackFixtures, CallbackReceiver, sleep, waitFor } from './helpers/callbacks';
import { freePort } from './helpers/free-port';
import { createOrder, orderRow, sql } from './helpers/orders';

/** A scrape that does not answer within this long is waiting on something it must not wait on. */
const SCRAPE_PATIENCE_MS = 5_000;

describe('/metrics costs nothing that grows with the data (real PostgreSQL and Redis)', () => {
  let api: TestApi;

  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(() => api.close());

  async function scrape(): Promise<string> {
    const answer = api.app.inject({ method: 'GET', url: '/metrics' });
    const timeout = new Promise<never>((_, fail) =>
      setTimeout(() => fail(new Error(`no answer from /metrics within ${SCRAPE_PATIENCE_MS} ms`)), SCRAPE_PATIENCE_MS).unref(),
    );
    const res = await Promise.race([answer, timeout]);
    expect(res.statusCode).toBe(200);
    return res.body;
  }

  const sample = (body: string, series: string): number | null => {
    const line = body.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? null : Number(line.slice(series.length + 1));
  };
  const refreshes = (body: string) => sample(body, 'merchant_pay_cached_gauge_refreshes_total{outcome="ok"}') ?? 0;
  const deliveries = (body: string) => ['pending', 'succeeded', 'failed'].map((status) => sample(body, `merchant_pay_callback_deliveries{status="${status}"}`));

  /** 1 pending, 2 succeeded and 3 failed deliveries, on one cancelled order's event. */
  async function seedDeliveries(): Promise<void> {
    // An address: without one the event's delivery is no_address, not pending (SPEC 7 Address).
    const { merchant, channels } = await merchantWithChannels(api.operator, { notifyUrl: 'https://merchant.example/notify' });
    const created = await createOrder(api.app, merchant, { cny_amount: '10.00', paychannel_id: channels.processor });
    const order = await orderRow(api.app, created.body.data.order_no);
    expect(await api.app.get(OrderLifecycle).markClosedByChannel(String(order.id))).toBe(true);
    for (const [status, copies] of [
      ['succeeded', 2],
      ['failed', 3],
    ] as const) {
      await sql(api.app).query(
        `INSERT INTO callback_deliveries (id, event_id, order_id, merchant_id, status, next_attempt_at)
         SELECT gen_random_uuid(), event_id, order_id, merchant_id, $1, now() FROM callback_deliveries, generate_series(1, $2) LIMIT $2`,
        [status, copies],
      );
    }
  }

  it('any number of scrapes start at most one refresh per 10 s, never wait for it (even on a locked table), and carry the counts', async () => {
    // The refresh at start-up: one per window.
    const atStart = await waitFor(
      async () => {
        const body = await scrape();
        return refreshes(body) === 1 ? body : null;
      },
      10_000,
      'the first refresh',
    );
    expect(deliveries(atStart)).toEqual([0, 0, 0]);
    expect(sample(atStart, 'merchant_pay_queue_jobs{queue="orders",state="waiting"}')).not.toBeNull();
    const windowStart = Date.now();

    await seedDeliveries();
    for (let i = 0; i < 30; i++) {
      const body = await scrape();
      expect(refreshes(body)).toBe(1);
      // Cached: the rows inserted since do not show until the next refresh.
      expect(deliveries(body)).toEqual([0, 0, 0]);
    }

    // A refresh is due; it will wait on the lock, the scrapes must not.
    // clock: the cached figures are due for a refresh after 10 s, nothing else makes them due
    await sleep(Math.max(0, windowStart + 10_100 - Date.now()));
    const locker = new Client({ connectionString: api.databaseUrl });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE callback_deliveries IN ACCESS EXCLUSIVE MODE');
      for (let i = 0; i < 10; i++) expect(refreshes(await scrape())).toBe(1);
      await locker.query('ROLLBACK');
    } finally {
      await locker.end();
    }

    const refreshed = await waitFor(
      async () => {
        const body = await scrape();
        return refreshes(body) === 2 ? body : null;
      },
      10_000,
      'the second refresh',
    );
    expect(deliveries(refreshed)).toEqual([1, 2, 3]);
    for (let i = 0; i < 10; i++) expect(refreshes(await scrape())).toBe(2);
  }, 40_000);
});

describe('METRICS_TOKEN', () => {
  let api: TestApi;
  const token = 'a-long-random-metrics-token';

  beforeAll(async () => {
    api = await startTestApi({ METRICS_TOKEN: token });
  });
  afterAll(() => api.close());

  const scrape = (authorization?: string) => api.app.inject({ method: 'GET', url: '/metrics', headers: authorization === undefined ? {} : { authorization } });

  it.each([
    ['no Authorization', undefined],
    ['a wrong token', 'Bearer not-the-token'],
    ['the token with one character more', `Bearer ${token}x`],
    ['the token as basic auth', `Basic ${Buffer.from(`x:${token}`).toString('base64')}`],
    ['the token without the scheme', token],
    ['an empty bearer', 'Bearer '],
  ])('answers 401 (40100, WWW-Authenticate: Bearer) to %s', async (_name, authorization) => {
    const res = await scrape(authorization);
    expect([res.statusCode, res.json().code, res.headers['www-authenticate']]).toEqual([401, 40100, 'Bearer']);
    expect(res.body).not.toContain('merchant_pay_');
  });

  it('serves the metrics to the bearer of the token', async () => {
    for (const authorization of [`Bearer ${token}`, `bearer ${token}`]) {
      const res = await scrape(authorization);
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain('merchant_pay_http_requests_total');
    }
  });

  it('leaves the other routes alone', async () => {
    expect((await api.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });
});

describe("the worker's metrics (WORKER_METRICS_PORT)", () => {
  it('counts settled deliveries by outcome and times each attempt; behind METRICS_TOKEN like the API', async () => {
    const receiver = await CallbackReceiver.start();
    const token = 'worker-metrics-token';
    const api = await startTestApi({ CALLBACK_ALLOW_PRIVATE: 'true', CALLBACK_RETRY_SCHEDULE: '100ms', METRICS_TOKEN: token });
    const port = await freePort();
    const worker = await createWorkerApp(new AppConfig({ ...api.config, workerMetricsPort: port }), { shutdownHooks: false, tuning: { callbackPollMs: 100 } });
    const db = await CallbackFixtures.connect(api.databaseUrl);
    try {
      const { merchant, channels } = await merchantWithChannels(api.operator, { notifyUrl: receiver.url });
      receiver.respond = (c) => (c.body.order_no === goneNo ? { status: 410 } : { status: 200, body: 'success' });
      const ok = await db.insertEvent((await db.insertOrder(merchant.id, channels.remotepay)).orderId);
      const gone = await db.insertOrder(merchant.id, channels.remotepay);
      const goneNo = gone.orderNo;
      const ended = await db.insertEvent(gone.orderId);
      // Fixture rows get their callback jobs as a committed transition's do.
      await api.app.get(CallbackJobs).deliver([ok.deliveryId, ended.deliveryId]);
      for (const id of [ok.deliveryId, ended.deliveryId]) await waitFor(() => db.ended(id), 10_000, 'settled');

      const url = `http://127.0.0.1:${port}/metrics`;
      expect((await fetch(url)).status).toBe(401);
      const body = await (await fetch(url, { headers: { authorization: `Bearer ${token}` } })).text();
      expect(body).toMatch(/merchant_pay_callback_deliveries_settled_total\{outcome="succeeded"\} 1\b/);
      expect(body).toMatch(/merchant_pay_callback_deliveries_settled_total\{outcome="failed"\} 1\b/);
      expect(body).toMatch(/merchant_pay_callback_attempt_duration_seconds_count\{outcome="success"\} 1\b/);
      expect(body).toMatch(/merchant_pay_callback_attempt_duration_seconds_count\{outcome="failure"\} 1\b/);
    } finally {
      await worker.close();
      await db.close();
      await api.close();
      await receiver.close();
    }
  });
});
