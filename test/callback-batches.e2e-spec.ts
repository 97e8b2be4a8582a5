import type { INestApplicationContext } from '@nestjs/common';
import { QUEUE } from '@app/common';
import { CallbackJobs } from '@app/callbacks';
import { JobQueue } from '@app/queue';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { CallbackFixtures, CallbackReceiver, waitFor } from './helpers/callbacks';

const TUNING = { callbackTimeoutMs: 2000, sweepIntervalMs: 250, sweepGraceMs: 1000, callbackPollMs: 200 };
const ENV = { CALLBACK_ALLOW_PRIVATE: 'true', CALLBACK_DESTINATION_CONCURRENCY: '64' };
const ORDERS = 60;

/**
 * Loads and records go in batches (CallbackAttemptRepository, StatementBatcher). Two workers on
 * one queue, each announcing every delivery at once (two API instances after one commit, a sweep
 * racing an add): one job per delivery (job id = delivery id), so one attempt of each goes, once,
 * each order in order, the records of both workers' batches exact.
 */
describe('callbacks: two workers racing on the same deliveries, loads and records batched', () => {
  let api: TestApi;
  let receiver: CallbackReceiver;
  let db: CallbackFixtures;
  const workers: INestApplicationContext[] = [];

  beforeAll(async () => {
    receiver = await CallbackReceiver.start();
    // A short wait at the merchant: the attempts of both workers overlap.
    receiver.respond = () => ({ status: 200, body: 'success', delayMs: 20 });
    api = await startTestApi(ENV);
    db = await CallbackFixtures.connect(api.databaseUrl);
  });

  afterAll(async () => {
    for (const w of workers.splice(0)) await w.close();
    await db?.close();
    await api?.close();
    await receiver?.close();
  });

  it('sends each attempt exactly once, each order in order, and the delivery counts stay exact', async () => {
    const merchants = await Promise.all([0, 1, 2].map(() => merchantWithChannels(api.operator, { notifyUrl: receiver.url })));
    const events: { orderId: string; paid: string; completed: string }[] = [];
    const heads: string[] = [];
    for (let i = 0; i < ORDERS; i++) {
      const { merchant, channels } = merchants[i % merchants.length];
      const { orderId } = await db.insertOrder(merchant.id, channels.remotepay);
      const paid = await db.insertEvent(orderId, 'order.paid');
      const completed = await db.insertEvent(orderId, 'order.completed');
      events.push({ orderId, paid: paid.eventId, completed: completed.eventId });
      heads.push(paid.deliveryId);
    }
    const first = await createWorkerApp(api.config, { shutdownHooks: false, tuning: TUNING });
    workers.push(first);
    const second = await createWorkerApp(api.config, { shutdownHooks: false, tuning: TUNING });
    workers.push(second);
    // Both announce every first delivery at once; each end adds the next one.
    await Promise.all([first.get(CallbackJobs).deliver(heads), second.get(CallbackJobs).deliver(heads)]);

    await waitFor(
      async () => (await db.db.query(`SELECT count(*)::int AS n FROM callback_deliveries WHERE status = 'succeeded'`)).rows[0].n === ORDERS * 2,
      30_000,
      'every delivery succeeded',
    );
    // Nothing in flight any more.
    await waitFor(
      async () => (await Promise.all([first, second].map((w) => w.get(JobQueue).queue(QUEUE.callbacks).getActiveCount()))).every((n) => n === 0),
      10_000,
      'no callback job active',
    );

    for (const e of events) {
      const paid = receiver.forEvent(e.paid);
      const completed = receiver.forEvent(e.completed);
      expect([paid.length, completed.length]).toEqual([1, 1]);
      expect(paid[0].headers['x-delivery-attempt']).toBe('1');
      expect(paid[0].at).toBeLessThanOrEqual(completed[0].at);
    }
    expect(receiver.received).toHaveLength(ORDERS * 2);
    const attempts = await db.db.query(`SELECT number, http_status, count(*)::int AS n FROM callback_attempts GROUP BY number, http_status`);
    expect(attempts.rows).toEqual([{ number: 1, http_status: 200, n: ORDERS * 2 }]);
    // callback_delivery_counts (appended by triggers) agrees with the rows.
    const counts = await db.db.query(
      `SELECT s.status, s.n, c.n AS counted FROM (SELECT status, count(*)::int AS n FROM callback_deliveries GROUP BY status) s
         FULL JOIN (SELECT status, sum(n)::int AS n FROM callback_delivery_counts GROUP BY status HAVING sum(n) <> 0) c USING (status)`,
    );
    expect(counts.rows).toEqual([{ status: 'succeeded', n: ORDERS * 2, counted: ORDERS * 2 }]);
  });
});
