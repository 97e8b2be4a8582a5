import type { INestApplicationContext } from '@nestjs/common';
import { Webhook } from 'standardwebhooks';
import { CallbackJobs, INTERNAL_FAILURE_TEST_TEXT, type TestAttemptView } from '@app/callbacks';
import { NonceStore } from '@app/db';
import { verify } from '@app/signature';
import type { Credentials } from '@app/operator';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { CallbackFixtures, CallbackReceiver, sleep, waitFor } from './helpers/callbacks';

const TUNING = { callbackTimeoutMs: 1000, sweepIntervalMs: 300, sweepGraceMs: 1000 };
const now = (): number => Math.floor(Date.now() / 1000);

interface ListedDelivery {
  delivery_id: string;
  event_id: string;
  event: string;
  url: string | null;
  status: string;
  attempts: { at: number; http_status: number | null; duration_ms: number; error: string | null; response_excerpt: string | null }[];
}

function whsec(secret: string): Webhook {
  return new Webhook(`whsec_${Buffer.from(secret, 'utf8').toString('base64')}`);
}

describe("the merchant's callback tools (SPEC 7)", () => {
  let api: TestApi;
  let worker: INestApplicationContext;
  let receiver: CallbackReceiver;
  let db: CallbackFixtures;
  let merchant: Credentials;
  let other: Credentials;
  let channelId: number;
  let otherChannelId: number;

  beforeAll(async () => {
    receiver = await CallbackReceiver.start();
    api = await startTestApi({ CALLBACK_RETRY_SCHEDULE: '200ms,200ms', CALLBACK_ALLOW_PRIVATE: 'true' });
    worker = await createWorkerApp(api.config, { shutdownHooks: false, tuning: TUNING });
    db = await CallbackFixtures.connect(api.databaseUrl);
    ({
      merchant,
      channels: { remotepay: channelId },
    } = await merchantWithChannels(api.operator, { notifyUrl: receiver.url }));
    ({
      merchant: other,
      channels: { remotepay: otherChannelId },
    } = await merchantWithChannels(api.operator, { notifyUrl: receiver.url }));
  });

  afterAll(async () => {
    await worker?.close();
    await db?.close();
    await api?.close();
    await receiver?.close();
  });

  beforeEach(() => {
    receiver.respond = () => ({ status: 200, body: 'success' });
  });

  /** An order whose event's only delivery ended failed `agoSeconds` ago. */
  async function failedEvent(
    owner: Credentials,
    channel: number,
    agoSeconds: number,
  ): Promise<{ orderId: string; orderNo: string; eventId: string; deliveryId: string }> {
    const order = await db.insertOrder(owner.id, channel);
    const event = await db.insertEvent(order.orderId);
    await db.db.query(
      `UPDATE callback_deliveries SET status = 'failed', attempts_made = 3, last_error = 'HTTP 500', updated_at = now() - make_interval(secs => $2) WHERE id = $1`,
      [event.deliveryId, agoSeconds],
    );
    return { ...order, ...event };
  }

  /** The next callbackRecover may run at once: its minute is over. */
  async function endRecoverMinute(owner: Credentials): Promise<void> {
    await db.db.query(`UPDATE callback_tool_allowances SET window_started_at = now() - interval '61 seconds' WHERE merchant_id = $1 AND tool = 'recover'`, [
      owner.id,
    ]);
  }

  describe('callbackQueryList', () => {
    it("lists the order's deliveries newest first, each attempt with status, duration, error and at most 256 characters of the answer", async () => {
      receiver.respond = (_c, i) => (i === 0 ? { status: 500, body: 'E'.repeat(1000) } : { status: 200, body: 'success' });
      const order = await db.insertOrder(merchant.id, channelId);
      const { eventId, deliveryId } = await db.insertEvent(order.orderId);
      await api.app.get(CallbackJobs).deliver(deliveryId);
      await waitFor(() => db.ended(deliveryId), 10_000, 'the delivery settled');
      const resend = await post<{ delivery_id: string }>(api.app, '/api/merchant/callbackResend', signed(merchant, { order_no: order.orderNo }));
      expect(resend.body.code).toBe(1);
      await waitFor(() => db.ended(resend.body.data.delivery_id), 10_000, 'the resend settled');

      const res = await post<{ list: ListedDelivery[]; total: number }>(
        api.app,
        '/api/merchant/callbackQueryList',
        signed(merchant, { order_no: order.orderNo }),
      );
      expect([res.status, res.body.code]).toEqual([200, 1]);
      expect(res.body.data.total).toBe(2);
      const [newest, first] = res.body.data.list;
      expect(newest).toMatchObject({
        delivery_id: resend.body.data.delivery_id,
        event_id: eventId,
        event: 'order.paid',
        url: receiver.url,
        status: 'succeeded',
      });
      expect(first).toMatchObject({ delivery_id: deliveryId, event_id: eventId, event: 'order.paid', url: receiver.url, status: 'succeeded' });
      expect(Object.keys(first).sort()).toEqual(['attempts', 'delivery_id', 'event', 'event_id', 'status', 'url']);
      expect(first.attempts).toHaveLength(2);
      expect(first.attempts[0]).toEqual({
        at: expect.any(Number),
        http_status: 500,
        duration_ms: expect.any(Number),
        error: 'HTTP 500',
        response_excerpt: 'E'.repeat(256),
      });
      expect(first.attempts[1]).toMatchObject({ http_status: 200, error: null, response_excerpt: 'success' });
      expect(Math.abs(first.attempts[0].at - now())).toBeLessThan(60);
      expect(first.attempts[1].at).toBeGreaterThanOrEqual(first.attempts[0].at);
    });

    it("an order without deliveries lists none; an unknown order or another merchant's is 40400; order_no is required", async () => {
      const quiet = await db.insertOrder(merchant.id, channelId, { status: 'pending' });
      const empty = await post<{ list: unknown[]; total: number }>(api.app, '/api/merchant/callbackQueryList', signed(merchant, { order_no: quiet.orderNo }));
      expect(empty.body).toMatchObject({ code: 1, data: { list: [], total: 0 } });

      const foreign = await failedEvent(other, otherChannelId, 10);
      for (const orderNo of [foreign.orderNo, '2025112112000099999999']) {
        const res = await post(api.app, '/api/merchant/callbackQueryList', signed(merchant, { order_no: orderNo }));
        expect([res.status, res.body.code, res.body.data]).toEqual([404, 40400, null]);
      }
      const missing = await post(api.app, '/api/merchant/callbackQueryList', signed(merchant, {}));
      expect([missing.status, missing.body.code]).toEqual([400, 40000]);
      expect(missing.body.msg).toMatch(/order_no/);
    });
  });

  describe('callbackRecover', () => {
    it('queues one new delivery per event that failed in the window, delivers it, and leaves the rest alone', async () => {
      await endRecoverMinute(merchant);
      const inWindow = await failedEvent(merchant, channelId, 3600);
      const twiceFailed = await failedEvent(merchant, channelId, 1800);
      // A second failed delivery of the same event: still one new delivery for that event.
      await db.db.query(
        `INSERT INTO callback_deliveries (id, event_id, order_id, merchant_id, status, attempts_made, next_attempt_at, origin, updated_at)
         VALUES (gen_random_uuid(), $1, $2, $3, 'failed', 3, now(), 'resend', now() - interval '20 minutes')`,
        [twiceFailed.eventId, twiceFailed.orderId, merchant.id],
      );
      const beforeWindow = await failedEvent(merchant, channelId, 3 * 3600);
      const pendingAgain = await failedEvent(merchant, channelId, 600);
      await db.db.query(
        `INSERT INTO callback_deliveries (id, event_id, order_id, merchant_id, status, attempts_made, next_attempt_at, origin, notify_url)
         VALUES (gen_random_uuid(), $1, $2, $3, 'pending', 0, now() + interval '1 hour', 'resend', $4)`,
        [pendingAgain.eventId, pendingAgain.orderId, merchant.id, receiver.url],
      );
      const deliveredSince = await failedEvent(merchant, channelId, 600);
      await db.db.query(
        `INSERT INTO callback_deliveries (id, event_id, order_id, merchant_id, status, attempts_made, next_attempt_at, origin)
         VALUES (gen_random_uuid(), $1, $2, $3, 'succeeded', 1, now(), 'resend')`,
        [deliveredSince.eventId, deliveredSince.orderId, merchant.id],
      );
      const othersFailure = await failedEvent(other, otherChannelId, 600);

      const res = await post<{ queued: number }>(api.app, '/api/merchant/callbackRecover', signed(merchant, { start_time: now() - 2 * 3600 }));
      expect([res.status, res.body.code, res.body.data]).toEqual([200, 1, { queued: 2 }]);

      for (const e of [inWindow, twiceFailed]) {
        const rows = await waitFor(
          async () => {
            const all = await db.deliveriesOfEvent(e.eventId);
            return all.some((d) => d.status === 'succeeded') && all;
          },
          10_000,
          'the recovered delivery succeeded',
        );
        expect(rows.filter((d) => d.status !== 'failed')).toHaveLength(1);
        expect(receiver.forEvent(e.eventId)).toHaveLength(1);
      }
      for (const e of [beforeWindow, othersFailure]) expect(await db.deliveriesOfEvent(e.eventId)).toHaveLength(1);
      expect(await db.deliveriesOfEvent(pendingAgain.eventId)).toHaveLength(2);
      expect(await db.deliveriesOfEvent(deliveredSince.eventId)).toHaveLength(2);
      const { rows } = await db.db.query(`SELECT count(*)::int AS n FROM callback_deliveries WHERE merchant_id = $1 AND origin = 'recover'`, [merchant.id]);
      expect(rows[0].n).toBe(2);
    });

    it('end_time bounds the window; a second run in the same window finds nothing left to queue', async () => {
      await endRecoverMinute(merchant);
      const early = await failedEvent(merchant, channelId, 5000);
      const late = await failedEvent(merchant, channelId, 100);
      const res = await post<{ queued: number }>(
        api.app,
        '/api/merchant/callbackRecover',
        signed(merchant, { start_time: String(now() - 6000), end_time: String(now() - 4000) }),
      );
      expect(res.body).toMatchObject({ code: 1, data: { queued: 1 } });
      expect(await db.deliveriesOfEvent(early.eventId)).toHaveLength(2);
      expect(await db.deliveriesOfEvent(late.eventId)).toHaveLength(1);
      await waitFor(async () => (await db.deliveriesOfEvent(early.eventId)).every((d) => d.status !== 'pending'), 10_000, 'recovered delivery settled');

      await endRecoverMinute(merchant);
      const again = await post<{ queued: number }>(
        api.app,
        '/api/merchant/callbackRecover',
        signed(merchant, { start_time: now() - 6000, end_time: now() - 4000 }),
      );
      expect(again.body).toMatchObject({ code: 1, data: { queued: 0 } });
    });

    it('at most once per minute per merchant: 42900 with Retry-After; each merchant has its own minute; concurrent calls run once', async () => {
      await endRecoverMinute(merchant);
      await endRecoverMinute(other);
      const first = await post(api.app, '/api/merchant/callbackRecover', signed(merchant, { start_time: now() - 60 }));
      expect(first.body.code).toBe(1);
      const second = await post(api.app, '/api/merchant/callbackRecover', signed(merchant, { start_time: now() - 60 }));
      expect([second.status, second.body.code]).toEqual([429, 42900]);
      const retryAfter = Number(second.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(55);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // Another merchant has its own minute.
      expect((await post(api.app, '/api/merchant/callbackRecover', signed(other, { start_time: now() - 60 }))).body.code).toBe(1);
      // Concurrent calls after the minute: exactly one runs.
      await endRecoverMinute(merchant);
      const codes = (
        await Promise.all(Array.from({ length: 5 }, () => post(api.app, '/api/merchant/callbackRecover', signed(merchant, { start_time: now() - 60 }))))
      ).map((r) => r.body.code);
      expect(codes.sort()).toEqual([1, 42900, 42900, 42900, 42900]);
    });

    it("the operator's callback:recover needs no queue: the workers' sweep gives the rows it writes their jobs", async () => {
      const own = await merchantWithChannels(api.operator, { notifyUrl: receiver.url });
      const e = await failedEvent(own.merchant, own.channels.remotepay, 300);
      const result = await api.operator.callbacks.recover(own.merchant.id, String(now() - 600), undefined);
      expect(result).toMatchObject({ merchant_id: own.merchant.id, queued: 1 });
      await waitFor(() => receiver.forEvent(e.eventId)[0], 15_000, 'the recovered delivery, its job added by the sweep');
      // The receiver sees the request before the worker has stored its answer.
      await waitFor(async () => (await db.delivery(result.delivery_ids[0])).status === 'succeeded', 15_000, 'the recovered delivery recorded succeeded');
    });

    it.each([
      [{}, 'start_time', /start_time is required/],
      [{ start_time: 'yesterday' }, 'start_time', /integer Unix seconds/],
      [{ start_time: now() - 8 * 86_400 }, 'start_time', /within the last 7 days/],
      [{ start_time: now() + 3600 }, 'start_time', /future/],
      [{ start_time: now() - 600, end_time: now() - 700 }, 'end_time', /not be before start_time/],
      [{ start_time: now() - 600, end_time: 1.5 }, 'end_time', /integer Unix seconds/],
    ])('40000 naming the field for %p, without using the minute', async (params, field, message) => {
      await endRecoverMinute(merchant);
      const res = await post<{ errors: { field: string; message: string }[] }>(api.app, '/api/merchant/callbackRecover', signed(merchant, params));
      expect([res.status, res.body.code]).toEqual([400, 40000]);
      expect(res.body.msg).toMatch(message);
      expect(res.body.data.errors[0].field).toBe(field);
      expect((await post(api.app, '/api/merchant/callbackRecover', signed(merchant, { start_time: now() - 60 }))).body.code).toBe(1);
    });
  });

  describe('callbackTest', () => {
    it("sends a signed webhook.test event to the merchant's notify URL at once and answers the attempt", async () => {
      receiver.respond = () => ({ status: 200, body: 'success' });
      const before = receiver.received.length;
      const res = await post<TestAttemptView>(api.app, '/api/merchant/callbackTest', signed(merchant));
      expect([res.status, res.body.code]).toEqual([200, 1]);
      expect(res.body.data).toEqual({
        url: receiver.url,
        http_status: 200,
        duration_ms: expect.any(Number),
        success: true,
        error: null,
        response_excerpt: 'success',
        signed_with: { body: 'current', webhook_signature: ['current'] },
      });
      expect(receiver.received).toHaveLength(before + 1);
      const got = receiver.received[before];
      expect(got.body).toMatchObject({ event: 'webhook.test', api_key: merchant.api_key });
      expect(got.headers['x-event-type']).toBe('webhook.test');
      expect(got.headers['webhook-id']).toBe(got.body.event_id);
      expect(whsec(merchant.api_secret).verify(got.raw, got.headers as Record<string, string>)).toEqual(got.body);
      const { signature, ...rest } = got.body;
      expect(verify(rest, signature as string, merchant.api_secret)).toBe(true);
      // Its nonce was claimed: the body sent back to the API is 40104, never answered as the merchant.
      const replay = await post(api.app, '/api/merchant/callbackTest', got.body);
      expect(replay.body.code).toBe(40104);
    });

    it('our own failure (the nonce store down) answers a fixed text, never its error, and sends nothing', async () => {
      const { merchant: m } = await merchantWithChannels(api.operator);
      const body = signed(m, { url: receiver.url });
      const claim = NonceStore.prototype.claim;
      // The request's own nonce is claimed as usual; the test event's fails as an unreachable Redis would.
      const spy = jest.spyOn(NonceStore.prototype, 'claim').mockImplementation(function (this: NonceStore, apiKey: string, nonce: string) {
        if (nonce === body.nonce) return claim.call(this, apiKey, nonce);
        return Promise.reject(new Error('connect ECONNREFUSED 10.9.8.7:6379'));
      });
      const before = receiver.received.length;
      try {
        const res = await post<TestAttemptView>(api.app, '/api/merchant/callbackTest', body);
        expect([res.status, res.body.code]).toEqual([200, 1]);
        expect(res.body.data).toMatchObject({ success: false, http_status: null, error: INTERNAL_FAILURE_TEST_TEXT });
        expect(res.raw).not.toMatch(/ECONNREFUSED|10\.9\.8\.7|6379/);
        expect(receiver.received).toHaveLength(before);
      } finally {
        spy.mockRestore();
      }
    });

    it('to a given url; a failing endpoint is a failed attempt in the answer, tried once, excerpt at most 256 characters', async () => {
      receiver.respond = () => ({ status: 503, body: 'X'.repeat(2000), headers: { 'retry-after': '1' } });
      const before = receiver.received.length;
      const url = `http://127.0.0.1:${receiver.port}/elsewhere`;
      const res = await post<TestAttemptView>(api.app, '/api/merchant/callbackTest', signed(merchant, { url }));
      expect(res.body.code).toBe(1);
      expect(res.body.data).toEqual({
        url,
        http_status: 503,
        duration_ms: expect.any(Number),
        success: false,
        error: 'HTTP 503',
        response_excerpt: 'X'.repeat(256),
        signed_with: { body: 'current', webhook_signature: ['current'] },
      });
      // absence check: the test callback is sent once, to the given url only; a stray one would come within this
      await sleep(1500);
      expect(receiver.received.slice(before).map((c) => c.path)).toEqual(['/elsewhere']);
    });

    it('40000 for a url that is not http(s), and when neither url nor a notify URL is there', async () => {
      for (const url of ['ftp://shop.test/x', 'not a url', 'x'.repeat(600)]) {
        const res = await post(api.app, '/api/merchant/callbackTest', signed(merchant, { url }));
        expect([res.status, res.body.code]).toEqual([400, 40000]);
        expect(res.body.msg).toMatch(/url must be an absolute http or https URL/);
      }
      const bare = await api.operator.merchants.create({ name: 'no-notify-url', mode: 'test' });
      const res = await post(api.app, '/api/merchant/callbackTest', signed(bare));
      expect([res.status, res.body.code]).toEqual([400, 40000]);
      expect(res.body.msg).toMatch(/no notify URL/);
    });

    it('at most 10 a minute per merchant, then 42900 with Retry-After', async () => {
      const m = (await merchantWithChannels(api.operator, { notifyUrl: receiver.url })).merchant;
      for (let i = 0; i < 10; i++) expect((await post(api.app, '/api/merchant/callbackTest', signed(m))).body.code).toBe(1);
      const limited = await post(api.app, '/api/merchant/callbackTest', signed(m));
      expect([limited.status, limited.body.code]).toEqual([429, 42900]);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    });
  });
});

describe('callbackTest under the address rules (CALLBACK_ALLOW_PRIVATE off)', () => {
  let api: TestApi;
  let receiver: CallbackReceiver;

  beforeAll(async () => {
    receiver = await CallbackReceiver.start();
    api = await startTestApi();
  });
  afterAll(async () => {
    await api?.close();
    await receiver?.close();
  });

  it.each([
    ['loopback', () => receiver.url],
    ['cloud metadata', () => 'http://169.254.169.254/latest/meta-data'],
    ['private, as an IPv4-mapped IPv6 literal', () => 'http://[::ffff:10.0.0.1]/notify'],
    ['name resolving to loopback', () => `http://localhost:${receiver.port}/notify`],
  ])('a %s address is refused as a failed attempt, not an error, and nothing is sent', async (_what, url) => {
    const { merchant } = await merchantWithChannels(api.operator);
    const res = await post<TestAttemptView>(api.app, '/api/merchant/callbackTest', signed(merchant, { url: url() }));
    expect([res.status, res.body.code]).toEqual([200, 1]);
    // The URL answered is the canonical form the one parser stores (SPEC 7 Address).
    expect(res.body.data).toMatchObject({ url: new URL(url()).href, http_status: null, success: false, response_excerpt: null });
    expect(res.body.data.error).toMatch(/refused|not allowed|blocked|private|loopback|metadata/i);
    expect(receiver.received).toHaveLength(0);
  });
});
