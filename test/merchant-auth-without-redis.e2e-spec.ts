import { type Credentials } from '@app/operator';
import { type TestApi, post, signed, startTestApi } from './helpers/api';
import { CallbackReceiver } from './helpers/callbacks';

const URL = '/api/merchant/getPayChannels';

/** Its own file: the API without Redis puts BullMQ on its PostgreSQL backend for the whole process. */
describe('signed requests without Redis (the embedded mode): the nonce table and in-memory buckets (real PostgreSQL)', () => {
  let api: TestApi;
  let merchant: Credentials;

  beforeAll(async () => {
    api = await startTestApi({
      REDIS_URL: '',
      QUEUE_BACKEND: 'postgres',
      CALLBACK_ALLOW_PRIVATE: 'true',
      RATE_LIMIT_MERCHANT_PER_SECOND: '1',
      RATE_LIMIT_MERCHANT_BURST: '3',
      RATE_LIMIT_AUTH_FAIL_PER_SECOND: '1000',
    });
    merchant = await api.operator.merchants.create({ name: 'embedded' });
  });
  afterAll(() => api?.close());

  it('a replayed nonce is 40104, and of 6 concurrent requests with one nonce exactly one passes', async () => {
    const m = await api.operator.merchants.create({ name: 'replays' });
    const once = signed(m);
    expect((await post(api.app, URL, once)).body.code).toBe(1);
    expect((await post(api.app, URL, once)).body.code).toBe(40104);
    const twice = signed(m);
    const codes = (await Promise.all(Array.from({ length: 6 }, () => post(api.app, URL, twice)))).map((a) => a.body.code).sort();
    expect(codes).toEqual([1, 40104, 40104, 40104, 40104, 40104]);
  });

  it('the per-api_key bucket: the burst, then 42900 with Retry-After, for that api_key only', async () => {
    const codes = [];
    for (let i = 0; i < 4; i++) codes.push((await post(api.app, URL, signed(merchant))).body.code);
    expect(codes).toEqual([1, 1, 1, 42900]);
    const limited = await post(api.app, URL, signed(merchant));
    expect([limited.status, limited.headers['retry-after']]).toEqual([429, '1']);
    expect((await post(api.app, URL, signed(await api.operator.merchants.create({ name: 'other' })))).body.code).toBe(1);
  });

  it('a disable reaches the cached merchant (LISTEN/NOTIFY needs no Redis)', async () => {
    const m = await api.operator.merchants.create({ name: 'to-disable' });
    expect((await post(api.app, URL, signed(m))).body.code).toBe(1);
    await api.operator.merchants.setStatus(m.id, 'disabled');
    const deadline = Date.now() + 1000;
    let code = 0;
    while (code !== 40300 && Date.now() < deadline) code = (await post(api.app, URL, signed(m))).body.code;
    expect(code).toBe(40300);
  });

  it("callbackTest and callbackRecover work without Redis: the test event's nonce is spent in the nonce table, the recover minute is PostgreSQL's", async () => {
    const receiver = await CallbackReceiver.start();
    try {
      const m = await api.operator.merchants.create({ name: 'tools-embedded', notifyUrl: receiver.url });
      const tested = await post<{ success: boolean }>(api.app, '/api/merchant/callbackTest', signed(m));
      expect(tested.body).toMatchObject({ code: 1, data: { success: true } });
      expect((await post(api.app, '/api/merchant/callbackTest', receiver.received[0].body)).body.code).toBe(40104);
      // clock: the bucket of 1 a second refills with time, nothing else shows it
      await new Promise((done) => setTimeout(done, 1100));
      const start = Math.floor(Date.now() / 1000) - 60;
      expect((await post(api.app, '/api/merchant/callbackRecover', signed(m, { start_time: start }))).body).toMatchObject({ code: 1, data: { queued: 0 } });
      // clock: the next second's token, spent by the recover above
      await new Promise((done) => setTimeout(done, 1100));
      expect((await post(api.app, '/api/merchant/callbackRecover', signed(m, { start_time: start }))).body.code).toBe(42900);
    } finally {
      await receiver.close();
    }
  });
});
