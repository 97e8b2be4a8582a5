import type { INestApplicationContext } from '@nestjs/common';
import { Worker } from 'bullmq';
import { QUEUE, parseNotifyUrl } from '@app/common';
import { CallbackJobs, DestinationGate, PARKED_JOB_DELAY_MS } from '@app/callbacks';
import { JobQueue } from '@app/queue';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { CallbackFixtures, CallbackReceiver, flushQueueKeys, sleep, waitFor } from './helpers/callbacks';

const TUNING = { callbackTimeoutMs: 1000, sweepIntervalMs: 250, sweepGraceMs: 1000, callbackPollMs: 200, lockDurationMs: 1000 };

describe('callbacks: SSRF refusal (CALLBACK_ALLOW_PRIVATE unset)', () => {
  let api: TestApi;
  let worker: INestApplicationContext;
  let receiver: CallbackReceiver;
  let db: CallbackFixtures;

  beforeAll(async () => {
    receiver = await CallbackReceiver.start();
    api = await startTestApi({ CALLBACK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms' });
    worker = await createWorkerApp(api.config, { shutdownHooks: false, tuning: TUNING });
    db = await CallbackFixtures.connect(api.databaseUrl);
  });

  afterAll(async () => {
    await worker?.close();
    await db?.close();
    await api?.close();
    await receiver?.close();
  });

  // Refusal happens before any connection: nothing is ever sent to 10.0.0.1 or 169.254.169.254.
  it.each([
    ['loopback', () => `http://127.0.0.1:${receiver.port}/notify`, /127\.0\.0\.1 is a loopback address/],
    ['private', () => 'http://10.0.0.1/notify', /10\.0\.0\.1 is a private address/],
    ['metadata', () => 'http://169.254.169.254/latest/meta-data', /169\.254\.169\.254 is a metadata address/],
    ['IPv6 loopback', () => `http://[::1]:${receiver.port}/notify`, /::1 is a loopback address/],
    ['IPv4-mapped IPv6', () => `http://[::ffff:127.0.0.1]:${receiver.port}/notify`, /::ffff:7f00:1 is a loopback address/],
    ['IPv4-translated IPv6 (::ffff:0:0:0/96)', () => `http://[::ffff:0:7f00:1]:${receiver.port}/notify`, /::ffff:0:7f00:1 is a loopback address/],
    ['6to4 IPv6 embedding a private address', () => `http://[2002:a00:1::1]:${receiver.port}/notify`, /2002:a00:1::1 is a private address/],
    ['a name resolving to loopback', () => `http://localhost:${receiver.port}/notify`, /localhost resolves to .*loopback address/],
  ])('refuses %s at send time, and ends the delivery after 3 attempts instead of the whole schedule', async (_name, url, message) => {
    // Written before the input rule (or a name that resolves to a private address): the worker still refuses it.
    const { merchant, channels } = await merchantWithChannels(api.operator);
    await db.db.query(`UPDATE merchants SET notify_url = $1 WHERE id = $2`, [url(), merchant.id]);
    const order = await db.insertOrder(merchant.id, channels.remotepay);
    const { deliveryId } = await db.insertEvent(order.orderId);
    await api.app.get(CallbackJobs).deliver(deliveryId);
    const row = await waitFor(() => db.ended(deliveryId), 10_000, 'delivery ended');
    expect(row.status).toBe('failed');
    const attempts = await db.attempts(deliveryId);
    // The schedule allows 5; a refused address gets 3 (SPEC 7 Address).
    expect(attempts).toHaveLength(3);
    for (const a of attempts) {
      expect(a.http_status).toBeNull();
      expect(a.error).toMatch(message);
      expect(a.error).toMatch(/^refused: .*CALLBACK_ALLOW_PRIVATE=true/);
    }
    expect(receiver.received).toHaveLength(0);
  });

  it.each([
    ['localhost', 'http://localhost:8080/notify', /localhost is this machine/],
    ['a loopback literal', 'http://127.0.0.1/notify', /127\.0\.0\.1 is a loopback address/],
    ['a private literal', 'https://10.1.2.3/notify', /10\.1\.2\.3 is a private address/],
    ['an IPv4-mapped loopback', 'http://[::ffff:127.0.0.1]/notify', /is a loopback address/],
  ])('refuses %s as notify_url where it is given: createOrder, createSellOrder, refundCreate and the operator (40000)', async (_name, url, why) => {
    const { merchant, channels } = await merchantWithChannels(api.operator);
    const order = await post(
      api.app,
      '/api/merchant/createOrder',
      signed(merchant, { order_type: 1, cny_amount: '10.00', paychannel_id: channels.remotepay, paychannel_paymethod: 'alipay', notify_url: url }),
    );
    expect([order.status, order.body.code]).toEqual([400, 40000]);
    expect(order.body.msg).toMatch(why);
    const sell = await post(
      api.app,
      '/api/merchant/createSellOrder',
      signed(merchant, {
        cny_amount: '10.00',
        paychannel_id: channels.remotepay,
        payee_name: 'Li Lei',
        payee_account: '6222020200112233445',
        payee_bank: 'ICBC',
        notify_url: url,
      }),
    );
    expect([sell.body.code, sell.body.msg]).toEqual([40000, expect.stringMatching(why)]);
    const refund = await post(
      api.app,
      '/api/merchant/refundCreate',
      signed(merchant, { order_no: '2000010101000000000000', refund_amount: '1.00', merchant_refund_no: 'r-1', notify_url: url }),
    );
    expect([refund.body.code, refund.body.msg]).toEqual([40000, expect.stringMatching(why)]);
    await expect(api.operator.merchants.setNotifyUrl(merchant.id, url)).rejects.toThrow(why);
    // A public name is judged when it resolves, at send time.
    const named = await post(
      api.app,
      '/api/merchant/createOrder',
      signed(merchant, {
        order_type: 1,
        cny_amount: '10.00',
        paychannel_id: channels.remotepay,
        paychannel_paymethod: 'alipay',
        notify_url: 'https://shop.example/notify',
      }),
    );
    expect(named.body.code).toBe(1);
  });
});

describe('callbacks: durability', () => {
  let api: TestApi;
  let receiver: CallbackReceiver;
  let db: CallbackFixtures;
  let merchantId: number;
  let channelId: number;
  const running: INestApplicationContext[] = [];

  async function startWorker(): Promise<INestApplicationContext> {
    const w = await createWorkerApp(api.config, { shutdownHooks: false, tuning: TUNING });
    running.push(w);
    return w;
  }

  async function stopWorker(w: INestApplicationContext): Promise<void> {
    running.splice(running.indexOf(w), 1);
    await w.close();
  }

  beforeAll(async () => {
    receiver = await CallbackReceiver.start();
    api = await startTestApi({ CALLBACK_RETRY_SCHEDULE: '400ms,400ms,400ms', CALLBACK_ALLOW_PRIVATE: 'true' });
    db = await CallbackFixtures.connect(api.databaseUrl);
    const fixture = await merchantWithChannels(api.operator, { notifyUrl: receiver.url });
    merchantId = fixture.merchant.id;
    channelId = fixture.channels.remotepay;
  });

  afterAll(async () => {
    for (const w of running.splice(0)) await w.close();
    await db?.close();
    await api?.close();
    await receiver?.close();
  });

  it('a worker stopped between attempts: a new one continues the schedule', async () => {
    receiver.respond = (_c, i) => (i === 0 ? { status: 500 } : { status: 200, body: 'success' });
    const first = await startWorker();
    const order = await db.insertOrder(merchantId, channelId);
    const { eventId, deliveryId } = await db.insertEvent(order.orderId);
    await api.app.get(CallbackJobs).deliver(deliveryId);
    await waitFor(async () => (await db.attempts(deliveryId)).some((a) => a.http_status === 500), 10_000, 'first attempt');
    await stopWorker(first);
    // absence check: a stopped worker sends no retry; one would come within the 500 ms schedule
    await sleep(800);
    expect(receiver.forEvent(eventId)).toHaveLength(1);
    expect((await db.delivery(deliveryId)).status).toBe('pending');

    const second = await startWorker();
    const row = await waitFor(() => db.ended(deliveryId), 10_000, 'delivery ended');
    expect(row).toMatchObject({ status: 'succeeded', attempts_made: 2 });
    expect(receiver.forEvent(eventId).map((c) => c.headers['x-delivery-attempt'])).toEqual(['1', '2']);
    await stopWorker(second);
  });

  it('the rows are the truth: after a Redis flush the sweep re-adds the lost jobs; a row whose job was never added and one whose worker died mid-attempt are sent', async () => {
    const worker = await startWorker();
    // 1: a delivery waiting for its retry when Redis is flushed.
    const retrying = await db.insertEvent((await db.insertOrder(merchantId, channelId)).orderId);
    receiver.respond = (c, i) => (c.body.event_id === retrying.eventId && i === 0 ? { status: 500 } : { status: 200, body: 'success' });
    await api.app.get(CallbackJobs).deliver(retrying.deliveryId);
    await waitFor(async () => (await db.attempts(retrying.deliveryId)).some((a) => a.http_status === 500), 10_000, 'first attempt');
    // 2: a delivery committed whose job was never added (the add after commit failed).
    const neverAnnounced = await db.insertEvent((await db.insertOrder(merchantId, channelId)).orderId);
    // 3: a worker killed mid-attempt: attempt 1 claimed, its lease expired, never recorded.
    const killed = await db.insertEvent((await db.insertOrder(merchantId, channelId)).orderId);
    await db.db.query(
      `UPDATE callback_deliveries SET attempts_made = 1, lease_until = now() - interval '1 second', next_attempt_at = now() - interval '1 second' WHERE id = $1`,
      [killed.deliveryId],
    );
    await db.db.query(`INSERT INTO callback_attempts (delivery_id, number, attempted_at, duration_ms, error) VALUES ($1, 1, now(), 0, 'interrupted')`, [
      killed.deliveryId,
    ]);

    await flushQueueKeys(api.config.queuePrefix);

    for (const d of [retrying, neverAnnounced, killed]) {
      const row = await waitFor(() => db.ended(d.deliveryId), 30_000, `delivery ${d.deliveryId} settled`);
      expect(row.status).toBe('succeeded');
    }
    expect(receiver.forEvent(retrying.eventId).map((c) => c.headers['x-delivery-attempt'])).toEqual(['1', '2']);
    expect(receiver.forEvent(neverAnnounced.eventId)).toHaveLength(1);
    expect(receiver.forEvent(killed.eventId).map((c) => c.headers['x-delivery-attempt'])).toEqual(['2']);
    expect((await db.attempts(killed.deliveryId)).map((a) => [a.number, a.http_status])).toEqual([
      [1, null],
      [2, 200],
    ]);
    await stopWorker(worker);
  }, 60_000);

  it('slots held by deliveries whose jobs stay parked (an admission nobody woke) are freed by the sweep: the line behind them is sent long before their leases end', async () => {
    receiver.respond = () => ({ status: 200, body: 'success' });
    const gate = api.app.get(DestinationGate);
    const queue = api.app.get(JobQueue).queue(QUEUE.callbacks);
    const destination = parseNotifyUrl(receiver.url)!.destination;
    const key = { merchantId, destination };
    // Every slot of the key reserved for a delivery another run already sent (the chaos run's case: a job
    // added again after Redis came back empty), its job parked, never woken.
    const stale: string[] = [];
    for (let i = 0; i < gate.rules.limit; i++) {
      const d = await db.insertEvent((await db.insertOrder(merchantId, channelId)).orderId);
      await db.db.query(`UPDATE callback_deliveries SET status = 'succeeded', attempts_made = 1 WHERE id = $1`, [d.deliveryId]);
      await queue.add('callback.deliver', { deliveryId: d.deliveryId, merchantId, destination }, { jobId: d.deliveryId, delay: PARKED_JOB_DELAY_MS });
      stale.push(d.deliveryId);
    }
    expect((await gate.enlist(key, stale)).map((a) => a.kind)).toEqual(stale.map(() => 'run'));
    const worker = await startWorker();
    const due = await db.insertEvent((await db.insertOrder(merchantId, channelId)).orderId);
    await api.app.get(CallbackJobs).deliver(due.deliveryId);
    // The stale slots' leases run 40 s (the 10 s HTTP budget and 30 s to record): the sweep must free them well before.
    const row = await waitFor(() => db.ended(due.deliveryId), 15_000, 'the delivery behind the stale slots ended');
    expect(row.status).toBe('succeeded');
    expect(receiver.forEvent(due.eventId)).toHaveLength(1);
    for (const id of stale) expect(await (await queue.getJob(id))?.getState()).toBe('completed');
    await stopWorker(worker);
  }, 30_000);

  it("a job another worker holds (BullMQ's lock is the lease) is left alone: it is sent only once the lock expired, the attempt that worker never recorded", async () => {
    receiver.respond = () => ({ status: 200, body: 'success' });
    const d = await db.insertEvent((await db.insertOrder(merchantId, channelId)).orderId);
    await api.app.get(CallbackJobs).deliver(d.deliveryId);
    // Another worker takes the job and holds its lock for 1.5 s (it is sending, or died while sending).
    const queue = api.app.get(JobQueue).queue(QUEUE.callbacks);
    const holder = new Worker(QUEUE.callbacks, null, { connection: queue.opts.connection, prefix: queue.opts.prefix, lockDuration: 1500, autorun: false });
    try {
      expect((await holder.getNextJob('holder'))?.id).toBe(d.deliveryId);
      const worker = await startWorker();
      // absence check: nothing is sent while the other worker holds the job's lock
      await sleep(1000);
      expect(receiver.forEvent(d.eventId)).toHaveLength(0);
      const row = await waitFor(() => db.ended(d.deliveryId), 15_000, 'delivery ended');
      expect(row).toMatchObject({ status: 'succeeded', attempts_made: 1 });
      expect(receiver.forEvent(d.eventId).map((c) => c.headers['x-delivery-attempt'])).toEqual(['1']);
      await stopWorker(worker);
    } finally {
      await holder.close(true);
    }
  });
});
