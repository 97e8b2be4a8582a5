import type { INestApplicationContext } from '@nestjs/common';
import { Webhook } from 'standardwebhooks';
import { CallbackJobs, INTERNAL_FAILURE_TEXT } from '@app/callbacks';
import { QUEUE } from '@app/common';
import { NonceStore } from '@app/db';
import { JobQueue } from '@app/queue';
import { OrderLifecycle } from '@app/orders';
import { sign, verify } from '@app/signature';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import type { Credentials } from '@app/operator';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { createOrder } from './helpers/orders';
import { CallbackFixtures, CallbackReceiver, type ReceivedCallback, sleep, waitFor } from './helpers/callbacks';

const SCHEDULE_MS = [200, 200, 400];
const TUNING = { callbackTimeoutMs: 1000, sweepIntervalMs: 300, callbackPollMs: 200 };

/** Both signatures, each checked independently of the worker's code path. */
function expectVerified(callback: ReceivedCallback, merchant: Credentials): void {
  const { signature, ...rest } = callback.body;
  // Body: the request algorithm of SPEC 3 (the vectors' one), recomputed here.
  expect(signature).toBe(sign(rest, merchant.api_secret));
  expect(verify(rest, signature as string, merchant.api_secret)).toBe(true);
  expect(rest.api_key).toBe(merchant.api_key);
  // Headers: the public Standard Webhooks library over the exact bytes received.
  const wh = new Webhook(`whsec_${Buffer.from(merchant.api_secret, 'utf8').toString('base64')}`);
  expect(wh.verify(callback.raw, callback.headers as Record<string, string>)).toEqual(callback.body);
  expect(callback.headers['webhook-id']).toBe(callback.body.event_id);
  expect(callback.headers['x-event-id']).toBe(callback.body.event_id);
  expect(callback.headers['x-event-type']).toBe(callback.body.event);
  expect(callback.headers['webhook-timestamp']).toBe(String(callback.body.timestamp));
}

describe('callbacks (SPEC 7)', () => {
  let api: TestApi;
  let workers: INestApplicationContext[];
  let receiver: CallbackReceiver;
  let db: CallbackFixtures;
  let merchant: Credentials;
  let channelId: number;

  beforeAll(async () => {
    receiver = await CallbackReceiver.start();
    api = await startTestApi({ CALLBACK_RETRY_SCHEDULE: SCHEDULE_MS.map((ms) => `${ms}ms`).join(','), CALLBACK_ALLOW_PRIVATE: 'true' });
    // Two copies, as in production: each event must still arrive once.
    workers = [
      await createWorkerApp(api.config, { shutdownHooks: false, tuning: TUNING }),
      await createWorkerApp(api.config, { shutdownHooks: false, tuning: TUNING }),
    ];
    db = await CallbackFixtures.connect(api.databaseUrl);
    const fixture = await merchantWithChannels(api.operator, { notifyUrl: receiver.url });
    merchant = fixture.merchant;
    channelId = fixture.channels.remotepay;
  });

  afterAll(async () => {
    for (const w of workers ?? []) await w.close();
    await db?.close();
    await api?.close();
    await receiver?.close();
  });

  beforeEach(() => {
    receiver.respond = () => ({ status: 200, body: 'success' });
  });

  /** A paid order's outbox rows, announced the way the orders code does after commit. */
  async function paidOrderEvent(notifyUrl?: string | null): Promise<{ orderId: string; orderNo: string; eventId: string; deliveryId: string }> {
    const order = await db.insertOrder(merchant.id, channelId, { notifyUrl });
    const event = await db.insertEvent(order.orderId);
    await api.app.get(CallbackJobs).deliver(event.deliveryId);
    return { ...order, ...event };
  }

  it('a real paid order: order.paid then order.completed, each once and in that order, both signatures verified', async () => {
    const { orderId, orderNo } = await db.insertOrder(merchant.id, channelId, { status: 'pending' });
    const lifecycle = workers[0].get(OrderLifecycle);
    expect(await lifecycle.markPaid(orderId, { amountFen: 10000, channelTradeNo: 'SBX-1' }, { final: true })).toBe('paid');

    const deliveries = await waitFor(
      async () => {
        const rows = await db.deliveriesOfOrder(orderId);
        return rows.length === 2 && rows.every((r) => r.status === 'succeeded') && rows;
      },
      15_000,
      'both deliveries succeeded',
    );
    expect(deliveries.map((d) => d.type)).toEqual(['order.paid', 'order.completed']);
    // absence check: no second copy of either arrives.
    await sleep(500);
    // Both were written in one transaction; order.completed still went out only after order.paid succeeded.
    expect(receiver.received.filter((c) => c.body.order_no === orderNo).map((c) => c.body.event)).toEqual(['order.paid', 'order.completed']);
    for (const d of deliveries) {
      const got = receiver.forEvent(d.event_id);
      expect(got).toHaveLength(1);
      expectVerified(got[0], merchant);
      expect(got[0].headers['x-delivery-attempt']).toBe('1');
      expect(Object.keys(got[0].body)).toEqual([
        'event_id',
        'event',
        'order_no',
        'merchant_order_no',
        'order_type',
        'status',
        'cny_amount',
        'merchant_actual_amount',
        'service_rate',
        'service_amount',
        'createtime',
        'updatetime',
        'paid_at',
        'api_key',
        'timestamp',
        'nonce',
        'signature',
      ]);
    }
    const paid = receiver.forEvent(deliveries[0].event_id)[0].body;
    expect(paid).toMatchObject({
      event: 'order.paid',
      status: 'paid',
      cny_amount: '100.00',
      merchant_actual_amount: 9940,
      service_rate: '0.00600000',
      service_amount: 60,
    });
    expect(receiver.forEvent(deliveries[1].event_id)[0].body).toMatchObject({ event: 'order.completed', status: 'completed' });
    const [attempt] = await db.attempts(deliveries[0].id);
    expect(attempt).toMatchObject({ number: 1, http_status: 200, response_excerpt: 'success', error: null, url: receiver.url });
  });

  it('retries after 500 with the schedule until success, logging every attempt', async () => {
    receiver.respond = (_c, i) => (i < 2 ? { status: 500, body: 'boom' } : { status: 200, body: '  SUCCESS\n' });
    const start = receiver.received.length;
    const { eventId, deliveryId } = await paidOrderEvent();
    const row = await waitFor(() => db.ended(deliveryId), 10_000, 'delivery ended');
    expect(row).toMatchObject({ status: 'succeeded', attempts_made: 3, last_error: null });
    const got = receiver.forEvent(eventId);
    expect(got.map((c) => c.headers['x-delivery-attempt'])).toEqual(['1', '2', '3']);
    expect(new Set(got.map((c) => c.headers['webhook-id']))).toEqual(new Set([eventId]));
    // A fresh timestamp, nonce and signature per attempt; every one verifies.
    expect(new Set(got.map((c) => c.body.nonce)).size).toBe(3);
    got.forEach((c) => expectVerified(c, merchant));
    expect(got[1].at - got[0].at).toBeGreaterThanOrEqual(SCHEDULE_MS[0] - 20);
    expect(got[2].at - got[1].at).toBeGreaterThanOrEqual(SCHEDULE_MS[1] - 20);
    expect(receiver.received.length - start).toBe(3);

    const attempts = await db.attempts(deliveryId);
    expect(attempts.map((a) => [a.number, a.http_status, a.response_excerpt, a.error])).toEqual([
      [1, 500, 'boom', 'HTTP 500'],
      [2, 500, 'boom', 'HTTP 500'],
      [3, 200, '  SUCCESS\n', null],
    ]);
    attempts.forEach((a) => {
      expect(a.duration_ms).toBeGreaterThanOrEqual(0);
      expect(a.attempted_at).toBeInstanceOf(Date);
    });
  });

  it('retries a 2xx whose body is not "success", and accepts an empty body', async () => {
    receiver.respond = (_c, i) => (i === 0 ? { status: 200, body: 'ok' } : { status: 204 });
    const received = receiver.received.length;
    const { eventId, deliveryId } = await paidOrderEvent();
    await waitFor(() => db.ended(deliveryId), 10_000, 'delivery ended');
    expect(receiver.forEvent(eventId)).toHaveLength(2);
    const attempts = await db.attempts(deliveryId);
    expect(attempts[0]).toMatchObject({ http_status: 200, response_excerpt: 'ok' });
    expect(attempts[0].error).toMatch(/unexpected answer/);
    expect(attempts[1]).toMatchObject({ http_status: 204, error: null });
    expect(receiver.received.length - received).toBe(2);
  });

  it('retries after a timeout', async () => {
    receiver.respond = (_c, i) => (i === 0 ? { status: 200, body: 'success', delayMs: 1500 } : { status: 200, body: 'success' });
    const { eventId, deliveryId } = await paidOrderEvent();
    const row = await waitFor(() => db.ended(deliveryId), 10_000, 'delivery ended');
    expect(row.status).toBe('succeeded');
    expect(receiver.forEvent(eventId)).toHaveLength(2);
    const attempts = await db.attempts(deliveryId);
    expect(attempts[0].http_status).toBeNull();
    expect(attempts[0].error).toMatch(/timeout/);
    expect(attempts[0].duration_ms).toBeGreaterThanOrEqual(900);
    expect(attempts[1]).toMatchObject({ number: 2, http_status: 200, error: null });
  });

  it('410 ends the delivery as failed at once', async () => {
    receiver.respond = () => ({ status: 410, body: 'gone' });
    const { eventId, deliveryId } = await paidOrderEvent();
    const row = await waitFor(() => db.ended(deliveryId), 10_000, 'delivery ended');
    expect(row).toMatchObject({ status: 'failed', attempts_made: 1, last_error: 'HTTP 410' });
    // absence check: no retry after a 410, for the whole retry schedule
    await sleep(SCHEDULE_MS.reduce((a, b) => a + b) + 300);
    expect(receiver.forEvent(eventId)).toHaveLength(1);
  });

  it('after the last attempt the delivery is failed and kept', async () => {
    receiver.respond = () => ({ status: 502, body: 'bad gateway' });
    const { eventId, deliveryId } = await paidOrderEvent();
    const row = await waitFor(() => db.ended(deliveryId), 10_000, 'delivery ended');
    expect(row).toMatchObject({ status: 'failed', attempts_made: SCHEDULE_MS.length + 1, last_error: 'HTTP 502' });
    // absence check: no attempt after the last one
    await sleep(800);
    expect(receiver.forEvent(eventId)).toHaveLength(SCHEDULE_MS.length + 1);
    expect((await db.attempts(deliveryId)).map((a) => a.number)).toEqual([1, 2, 3, 4]);
  });

  it('Bull Board shows the callback as its job, with its attempts; a retry pressed there does what callbackResend does', async () => {
    receiver.respond = () => ({ status: 502, body: 'bad gateway' });
    const { eventId, deliveryId, orderId } = await paidOrderEvent();
    const queue = api.app.get(JobQueue).queue(QUEUE.callbacks);
    const job = await waitFor(
      async () => {
        const j = await queue.getJob(deliveryId);
        return j && (await j.isFailed()) ? j : null;
      },
      10_000,
      'the failed job',
    );
    // Each retried attempt is one of the job's (the last, ended by UnrecoverableError, is its failure).
    expect(job.attemptsMade).toBeGreaterThanOrEqual(SCHEDULE_MS.length);
    // On a mismatch the job's error of each run and the recorded attempts show which run was not an attempt.
    const history = {
      failedReason: job.failedReason,
      errors: (job.stacktrace ?? []).map((trace) => trace.split('\n')[0]),
      attempts: (await db.attempts(deliveryId)).map((a) => [a.number, a.http_status]),
    };
    expect(history).toMatchObject({ failedReason: expect.stringMatching(/delivery ended/) });

    receiver.respond = () => ({ status: 200, body: 'success' });
    // What Bull Board's retry button calls.
    await job.retry('failed');
    const resent = await waitFor(
      async () => (await db.deliveriesOfOrder(orderId)).find((d) => d.id !== deliveryId && d.status === 'succeeded'),
      10_000,
      'the resent delivery',
    );
    expect(resent.event_id).toBe(eventId);
    expect((await db.delivery(deliveryId)).status).toBe('failed');
    const { rows } = await db.db.query<{ origin: string }>(`SELECT origin FROM callback_deliveries WHERE id = $1`, [resent.id]);
    expect(rows[0].origin).toBe('resend');
    expect(receiver.forEvent(eventId).at(-1)!.headers['x-delivery-attempt']).toBe('1');
  });

  it('honours Retry-After on 503', async () => {
    receiver.respond = (_c, i) => (i === 0 ? { status: 503, headers: { 'retry-after': '1' } } : { status: 200, body: 'success' });
    const { eventId, deliveryId } = await paidOrderEvent();
    await waitFor(() => db.ended(deliveryId), 10_000, 'delivery ended');
    const got = receiver.forEvent(eventId);
    expect(got).toHaveLength(2);
    expect(got[1].at - got[0].at).toBeGreaterThanOrEqual(980);
  });

  it('honours Retry-After on 429, when it is longer than the schedule', async () => {
    receiver.respond = (_c, i) => (i === 0 ? { status: 429, headers: { 'retry-after': '2' }, body: 'slow down' } : { status: 200, body: 'success' });
    const { eventId, deliveryId } = await paidOrderEvent();
    await waitFor(() => db.ended(deliveryId), 10_000, 'delivery ended');
    const got = receiver.forEvent(eventId);
    expect(got).toHaveLength(2);
    // The schedule alone would retry after 200-220 ms.
    expect(got[1].at - got[0].at).toBeGreaterThanOrEqual(1980);
    const attempts = await db.attempts(deliveryId);
    expect(attempts.map((a) => [a.http_status, a.error])).toEqual([
      [429, 'HTTP 429'],
      [200, null],
    ]);
  });

  it.each([302, 307])('does not follow a %i redirect, even to an address that would accept', async (status) => {
    const accepting = `http://127.0.0.1:${receiver.port}/accepts`;
    receiver.respond = (c) => (c.path === '/notify' ? { status, headers: { location: accepting }, body: '' } : { status: 200, body: 'success' });
    const { eventId, deliveryId } = await paidOrderEvent();
    const row = await waitFor(() => db.ended(deliveryId), 10_000, 'delivery ended');
    expect(row).toMatchObject({ status: 'failed', attempts_made: SCHEDULE_MS.length + 1 });
    const attempts = await db.attempts(deliveryId);
    expect(attempts).toHaveLength(SCHEDULE_MS.length + 1);
    for (const a of attempts) {
      expect(a.http_status).toBe(status);
      expect(a.error).toBe(`HTTP ${status}: redirects are not followed`);
    }
    expect(receiver.forEvent(eventId).map((c) => c.path)).toEqual(Array(SCHEDULE_MS.length + 1).fill('/notify'));
    expect(receiver.received.filter((c) => c.path === '/accepts')).toEqual([]);
  });

  it('reads at most 64 KiB of an answer: a 32 MiB "200" is a failed attempt and is never read to its end', async () => {
    const total = 32 * 1024 * 1024;
    receiver.respond = (_c, i) => (i === 0 ? { status: 200, streamBytes: total } : { status: 200, body: 'success' });
    const { eventId, deliveryId } = await paidOrderEvent();
    const row = await waitFor(() => db.ended(deliveryId), 10_000, 'delivery ended');
    expect(row).toMatchObject({ status: 'succeeded', attempts_made: 2 });
    const [first] = receiver.forEvent(eventId);
    // The worker hung up: the answer was cut off, far short of its length (the kernel buffers a few MiB at most).
    await waitFor(() => first.answer?.closed, 5_000, 'the first answer closed');
    expect(first.answer).toMatchObject({ finished: false, closed: true });
    expect(first.answer!.written).toBeLessThan(total / 2);
    const [attempt] = await db.attempts(deliveryId);
    expect(attempt).toMatchObject({
      number: 1,
      http_status: 200,
      error: `HTTP 200 with an answer over ${64 * 1024} bytes: expected "success" or an empty body`,
    });
    expect(attempt.response_excerpt).toBe('x'.repeat(1024));
  });

  it('stores at most the first 1 KiB of an answer, cut between characters', async () => {
    const ascii = 'e'.repeat(5000);
    const chinese = `ab${'汉'.repeat(2000)}`;
    const invalid = Buffer.alloc(2000, 0xff);
    const answers: (string | Buffer)[] = [ascii, chinese, invalid];
    receiver.respond = (_c, i) => (i < answers.length ? { status: 500, body: answers[i] } : { status: 200, body: 'success' });
    const { deliveryId } = await paidOrderEvent();
    await waitFor(() => db.ended(deliveryId), 10_000, 'delivery ended');
    const excerpts = (await db.attempts(deliveryId)).map((a) => a.response_excerpt ?? '');
    expect(excerpts.map((e) => Buffer.byteLength(e, 'utf8') <= 1024)).toEqual([true, true, true, true]);
    expect(excerpts[0]).toBe(ascii.slice(0, 1024));
    // 1024 bytes end inside the 341st character: the excerpt stops before it.
    expect(excerpts[1]).toBe(`ab${'汉'.repeat(340)}`);
    expect(excerpts[2]).toMatch(/^\uFFFD+$/);
    expect(excerpts[3]).toBe('success');
  });

  it('an order and merchant without a callback address: recorded as no_address, no job, no attempt; a resend sends it once the merchant has one', async () => {
    const other = await merchantWithChannels(api.operator);
    const order = await db.insertOrder(other.merchant.id, other.channels.remotepay);
    const { deliveryId, eventId } = await db.insertEvent(order.orderId);
    await api.app.get(CallbackJobs).deliver(deliveryId);
    expect(await db.delivery(deliveryId)).toMatchObject({ status: 'no_address', attempts_made: 0 });
    expect(await api.app.get(JobQueue).queue(QUEUE.callbacks).getJob(deliveryId)).toBeUndefined();
    // Through an order's own transition (the lifecycle's after-commit) likewise: recorded, no job.
    const expired = await db.insertOrder(other.merchant.id, other.channels.remotepay, { status: 'pending' });
    expect(await api.app.get(OrderLifecycle).markClosedByChannel(expired.orderId)).toBe(true);
    const [cancelled] = (await db.db.query<{ id: string; status: string }>(`SELECT id, status FROM callback_deliveries WHERE order_id = $1`, [expired.orderId]))
      .rows;
    expect(cancelled.status).toBe('no_address');
    expect(await api.app.get(JobQueue).queue(QUEUE.callbacks).getJob(cancelled.id)).toBeUndefined();
    const listed = await post<{ list: { delivery_id: string; status: string; attempts: unknown[] }[] }>(
      api.app,
      '/api/merchant/callbackQueryList',
      signed(other.merchant, { order_no: order.orderNo }),
    );
    expect(listed.body.data.list).toEqual([expect.objectContaining({ delivery_id: deliveryId, status: 'no_address', attempts: [] })]);
    // The merchant gets an address: callbackResend sends the event, with its event_id.
    await api.operator.merchants.setNotifyUrl(other.merchant.id, receiver.url);
    const resent = await post<{ event_id: string; delivery_id: string }>(
      api.app,
      '/api/merchant/callbackResend',
      signed(other.merchant, { order_no: order.orderNo }),
    );
    expect(resent.body.data).toMatchObject({ event_id: eventId });
    await waitFor(() => receiver.forEvent(eventId).length === 1, 10_000, 'the resent event');
    expect(await waitFor(() => db.ended(resent.body.data.delivery_id), 10_000, 'resent delivery settled')).toMatchObject({ status: 'succeeded' });
  });

  it.each([
    // The old SQL key read the host after the '@' (39111), the sender the one before it: one merchant could trip another's circuit.
    ['userinfo hiding the host', 'http://127.0.0.1:39112\\@127.0.0.1:39111/'],
    // WHATWG reads http://host/..., the old SQL key read nothing (no slot limit, no circuit).
    ['one slash', 'http:/127.0.0.1:39111/notify'],
    ['an empty userinfo', 'http://@127.0.0.1:39111/notify'],
  ])('a notify_url read two ways (%s) is refused at input: createOrder and merchant:set-notify-url', async (_why, url) => {
    const res = await createOrder(api.app, merchant, { cny_amount: '10.00', paychannel_id: channelId, notify_url: url });
    expect([res.status, res.body.code]).toEqual([400, 40000]);
    expect(res.body.msg).toMatch(/notify_url must be an absolute http or https URL without userinfo or backslash/);
    await expect(api.operator.merchants.setNotifyUrl(merchant.id, url)).rejects.toThrow(/notifyUrl must be an absolute http or https URL/);
  });

  it('a notify_url is stored in its canonical form', async () => {
    const res = await createOrder(api.app, merchant, {
      cny_amount: '10.00',
      paychannel_id: channelId,
      notify_url: `HTTP://127.0.0.1:${receiver.port}/Canon?x=1`,
    });
    expect(res.body.code).toBe(1);
    const [row] = (await db.db.query<{ notify_url: string }>(`SELECT notify_url FROM orders WHERE order_no = $1`, [res.body.data.order_no])).rows;
    expect(row.notify_url).toBe(`http://127.0.0.1:${receiver.port}/Canon?x=1`);
  });

  it("the order's notify_url overrides the merchant's", async () => {
    const other = await CallbackReceiver.start();
    try {
      const { eventId, deliveryId } = await paidOrderEvent(other.url);
      await waitFor(() => db.ended(deliveryId), 10_000, 'delivery ended');
      expect(other.forEvent(eventId)).toHaveLength(1);
      expect(receiver.forEvent(eventId)).toHaveLength(0);
    } finally {
      await other.close();
    }
  });

  it('a callback is never a merchant request: every attempt and every resend, sent back as is, is 40104 on every operation', async () => {
    receiver.respond = (_c, i) => (i === 0 ? { status: 500, body: 'try again' } : { status: 200, body: 'success' });
    const { orderId, orderNo } = await db.insertOrder(merchant.id, channelId, { status: 'pending' });
    expect(await workers[0].get(OrderLifecycle).markPaid(orderId, { amountFen: 10000, channelTradeNo: 'SBX-NONCE' }, { final: true })).toBe('paid');
    await waitFor(
      async () => {
        const rows = await db.deliveriesOfOrder(orderId);
        return rows.length === 2 && rows.every((r) => r.status === 'succeeded');
      },
      15_000,
      'order.paid and order.completed delivered',
    );
    const resend = await post<{ event_id: string }>(api.app, '/api/merchant/callbackResend', signed(merchant, { order_no: orderNo }));
    expect(resend.body.code).toBe(1);
    await waitFor(async () => (await db.deliveriesOfOrder(orderId)).filter((r) => r.status === 'succeeded').length === 3, 10_000, 'the resend delivered');

    const captured = receiver.received.filter((c) => c.body.order_no === orderNo);
    // order.paid twice (a 500, then success), order.completed twice, and the resend.
    expect(captured.map((c) => [c.body.event, c.headers['x-delivery-attempt']]).sort()).toEqual([
      ['order.completed', '1'],
      ['order.completed', '1'],
      ['order.completed', '2'],
      ['order.paid', '1'],
      ['order.paid', '2'],
    ]);
    for (const callback of captured) {
      // Signed exactly like a request with the merchant's secret: only the spent nonce refuses it.
      expectVerified(callback, merchant);
      for (const op of ['createOrder', 'orderQueryList', 'orderQueryDetail', 'getPayChannels', 'callbackResend']) {
        const res = await post(api.app, `/api/merchant/${op}`, callback.raw);
        expect([op, res.status, res.body.code]).toEqual([op, 401, 40104]);
      }
    }
  });

  it('a callback whose nonce cannot be recorded is not sent: the attempt fails and the next one goes out; the merchant reads a fixed text, not our error', async () => {
    // The nonce store (Redis here) failing once, whichever worker asks, as when it is unreachable.
    const spy = jest.spyOn(NonceStore.prototype, 'claim').mockRejectedValueOnce(new Error('Connection is closed.'));
    try {
      const { eventId, deliveryId, orderNo } = await paidOrderEvent();
      const row = await waitFor(() => db.ended(deliveryId), 10_000, 'delivery ended');
      expect(row.status).toBe('succeeded');
      const attempts = await db.attempts(deliveryId);
      expect(attempts.map((a) => [a.number, a.http_status, a.error])).toEqual([
        [1, null, INTERNAL_FAILURE_TEXT],
        [2, 200, null],
      ]);
      expect(receiver.forEvent(eventId).map((c) => c.headers['x-delivery-attempt'])).toEqual(['2']);
      // callbackQueryList (the portal's order page reads the same rows): our own failure, never its text.
      const listed = await post<{ list: { delivery_id: string; attempts: { error: string | null }[] }[] }>(
        api.app,
        '/api/merchant/callbackQueryList',
        signed(merchant, { order_no: orderNo }),
      );
      expect(listed.body.data.list.find((d) => d.delivery_id === deliveryId)?.attempts.map((a) => a.error)).toEqual([INTERNAL_FAILURE_TEXT, null]);
      expect(listed.raw).not.toContain('Connection is closed');
    } finally {
      spy.mockRestore();
    }
  });

  describe('callbackResend', () => {
    it('queues a new delivery of the latest event with the same event_id', async () => {
      const { orderNo, eventId, deliveryId } = await paidOrderEvent();
      await waitFor(() => db.ended(deliveryId), 10_000, 'first delivery');
      const res = await post<{ event_id: string; event: string; delivery_id: string }>(
        api.app,
        '/api/merchant/callbackResend',
        signed(merchant, { order_no: orderNo }),
      );
      expect(res.status).toBe(200);
      expect(res.body.code).toBe(1);
      const deliveries = await waitFor(
        async () => {
          const rows = await db.deliveriesOfEvent(eventId);
          return rows.length === 2 && rows.every((r) => r.status === 'succeeded') && rows;
        },
        10_000,
        'the resent delivery',
      );
      expect(deliveries[1].id).not.toBe(deliveryId);
      expect(res.body.data).toEqual({ event_id: eventId, event: 'order.paid', delivery_id: deliveries[1].id });
      const got = receiver.forEvent(eventId);
      expect(got).toHaveLength(2);
      expect(got[1].headers['webhook-id']).toBe(eventId);
      expectVerified(got[1], merchant);
    });

    it('resends the latest event when there are several; while its delivery is pending, names that one', async () => {
      const { orderId, orderNo } = await paidOrderEvent();
      // clock: the later event gets a later created_at
      await sleep(5);
      // Written by the outbox but not yet sent: still pending.
      const later = await db.insertEvent(orderId, 'order.completed');
      const res = await post<{ event_id: string; event: string; delivery_id: string }>(
        api.app,
        '/api/merchant/callbackResend',
        signed(merchant, { order_no: orderNo }),
      );
      expect(res.body.data).toEqual({ event_id: later.eventId, event: 'order.completed', delivery_id: later.deliveryId });
      expect(await db.deliveriesOfEvent(later.eventId)).toHaveLength(1);
    });

    it('cannot be turned into a flood: 20 concurrent resends while one is pending queue exactly one delivery', async () => {
      // A merchant endpoint that never answers in time: the resent delivery stays pending, retrying.
      const slow = await CallbackReceiver.start();
      slow.respond = () => ({ status: 200, body: 'success', delayMs: 5_000 });
      try {
        const order = await db.insertOrder(merchant.id, channelId, { notifyUrl: slow.url });
        const { eventId, deliveryId } = await db.insertEvent(order.orderId);
        await db.db.query(`UPDATE callback_deliveries SET status = 'succeeded' WHERE id = $1`, [deliveryId]);
        const answers = await Promise.all(
          Array.from({ length: 20 }, () =>
            post<{ event_id: string; delivery_id: string }>(api.app, '/api/merchant/callbackResend', signed(merchant, { order_no: order.orderNo })),
          ),
        );
        expect(answers.map((a) => a.body.code)).toEqual(Array(20).fill(1));
        const rows = await db.deliveriesOfEvent(eventId);
        expect(rows).toHaveLength(2);
        expect(new Set(answers.map((a) => a.body.data.delivery_id))).toEqual(new Set([rows[1].id]));
        expect(answers.every((a) => a.body.data.event_id === eventId)).toBe(true);
      } finally {
        await slow.close();
      }
    });

    it('at most 10 resends per order per hour: then 42900 with Retry-After until the oldest leaves the hour', async () => {
      const { orderId, orderNo, eventId, deliveryId } = await paidOrderEvent();
      await waitFor(() => db.ended(deliveryId), 10_000, 'first delivery');
      const resend = () => post<{ delivery_id: string }>(api.app, '/api/merchant/callbackResend', signed(merchant, { order_no: orderNo }));
      for (let i = 0; i < 10; i++) {
        const res = await resend();
        expect(res.body.code).toBe(1);
        await waitFor(() => db.ended(res.body.data.delivery_id), 10_000, `resend ${i + 1} delivered`);
      }
      const refused = await resend();
      expect([refused.status, refused.body.code]).toEqual([429, 42900]);
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(3500);
      expect(retryAfter).toBeLessThanOrEqual(3600);
      expect(await db.deliveriesOfEvent(eventId)).toHaveLength(11);

      // An hour later the oldest resend no longer counts: one more, then the limit again.
      await db.db.query(
        `UPDATE callback_deliveries SET created_at = now() - interval '61 minutes'
          WHERE id = (SELECT id FROM callback_deliveries WHERE order_id = $1 AND id <> $2 ORDER BY created_at LIMIT 1)`,
        [orderId, deliveryId],
      );
      const again = await resend();
      expect(again.body.code).toBe(1);
      await waitFor(() => db.ended(again.body.data.delivery_id), 10_000, 'the freed resend delivered');
      expect((await resend()).body.code).toBe(42900);
    });

    it("40400 for an unknown order, another merchant's order, or an order with no event yet", async () => {
      const unknown = await post(api.app, '/api/merchant/callbackResend', signed(merchant, { order_no: '2025112112000099999999' }));
      expect([unknown.status, unknown.body.code, unknown.body.data]).toEqual([404, 40400, null]);

      const other = await merchantWithChannels(api.operator);
      const foreign = await db.insertOrder(other.merchant.id, other.channels.remotepay);
      await db.insertEvent(foreign.orderId);
      const res = await post(api.app, '/api/merchant/callbackResend', signed(merchant, { order_no: foreign.orderNo }));
      expect([res.status, res.body.code]).toEqual([404, 40400]);

      const pending = await db.insertOrder(merchant.id, channelId, { status: 'pending' });
      const none = await post(api.app, '/api/merchant/callbackResend', signed(merchant, { order_no: pending.orderNo }));
      expect([none.status, none.body.code]).toEqual([404, 40400]);
    });

    it('40000 without order_no', async () => {
      const res = await post(api.app, '/api/merchant/callbackResend', signed(merchant, {}));
      expect([res.status, res.body.code]).toEqual([400, 40000]);
    });
  });
});
