import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { NONCE_MARGIN_SECONDS, NonceStore } from '@app/db';
import { sign } from '@app/signature';
import { type Credentials } from '@app/operator';
import { type TestApi, merchantWithChannels, newNonce, post, signed, startTestApi } from './helpers/api';
import { HEARD_WITHIN_MS, waitFor } from './helpers/callbacks';

const URL = '/api/merchant/getPayChannels';

describe('MerchantAuthGuard (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let merchant: Credentials;

  beforeAll(async () => {
    // Some thirty refusals from one address here; the auth-failure throttle has its own spec.
    api = await startTestApi({ RATE_LIMIT_AUTH_FAIL_PER_SECOND: '1000' });
    ({ merchant } = await merchantWithChannels(api.operator));
  });
  afterAll(() => api.close());

  const now = () => Math.floor(Date.now() / 1000);

  it('accepts a correctly signed JSON request', async () => {
    const res = await post(api.app, URL, signed(merchant));
    expect(res.status).toBe(200);
    expect(res.body.code).toBe(1);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('accepts a form-urlencoded request', async () => {
    const params = signed(merchant, { category: 'processor' });
    const form = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)] as [string, string])).toString();
    const res = await post(api.app, URL, form, 'application/x-www-form-urlencoded');
    expect(res.body.code).toBe(1);
  });

  it('JSON sent as a form (curl -d without a Content-Type) is 40000 saying it was not read as JSON, never "api_key is required"', async () => {
    const res = await post(api.app, URL, JSON.stringify(signed(merchant)), 'application/x-www-form-urlencoded');
    expect([res.status, res.body.code]).toEqual([400, 40000]);
    expect(res.body.msg).toBe(
      'body: looks like JSON but was sent as a form (Content-Type: application/x-www-form-urlencoded), so it was not read as JSON: send it with Content-Type: application/json',
    );
    // Without any Content-Type, or as text: 41500 naming the two types it takes.
    const text = await post(api.app, URL, JSON.stringify(signed(merchant)), 'text/plain');
    expect([text.status, text.body.code, text.body.msg]).toEqual([415, 41500, expect.stringContaining('Content-Type: application/json')]);
  });

  it('accepts every parameter in the query string, and query and body merged', async () => {
    const params = signed(merchant);
    const qs = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)] as [string, string])).toString();
    const res = await api.app.inject({ method: 'POST', url: `${URL}?${qs}` });
    expect(res.json().code).toBe(1);

    const query = { category: 'remotepay' };
    const body = signed(merchant, {}, query);
    const merged = await post(api.app, `${URL}?category=remotepay`, body);
    expect(merged.body.code).toBe(1);
  });

  it('refuses a key given differently in the query and the body with 40000', async () => {
    const body = signed(merchant, { category: 'processor' });
    const res = await post(api.app, `${URL}?category=remotepay`, body);
    expect([res.status, res.body.code]).toEqual([400, 40000]);
  });

  it.each([
    ['api_key', undefined],
    ['timestamp', undefined],
    ['timestamp', 'yesterday'],
    ['timestamp', 1.5],
    ['nonce', undefined],
    ['nonce', 'short'],
    ['nonce', 'has space!!'],
    ['nonce', 'a'.repeat(65)],
    ['signature', undefined],
    ['signature', 'abc'],
  ])('answers 40100 when %s is %p', async (field, value) => {
    const params = signed(merchant);
    if (value === undefined) delete params[field];
    else params[field] = value;
    const res = await post(api.app, URL, params);
    expect([res.status, res.body.code]).toEqual([401, 40100]);
  });

  it('answers 40101 for an unknown api_key', async () => {
    const res = await post(api.app, URL, signed({ api_key: 'mk_000000000000000000000000', api_secret: merchant.api_secret }));
    expect([res.status, res.body.code]).toEqual([401, 40101]);
  });

  it('answers 40102 for a wrong signature and for a changed parameter', async () => {
    const wrongKey = await post(api.app, URL, signed({ api_key: merchant.api_key, api_secret: 'not-the-secret' }));
    expect([wrongKey.status, wrongKey.body.code]).toEqual([401, 40102]);
    const tampered = signed(merchant, { category: 'processor' });
    tampered.category = 'warehouse';
    const res = await post(api.app, URL, tampered);
    expect(res.body.code).toBe(40102);
  });

  it('40102 for a test key shows the canonical string the service signed; for a live key nothing', async () => {
    const params = { api_key: merchant.api_key, timestamp: now(), nonce: newNonce(), category: 'processor', customer: '张三' };
    const res = await post(api.app, URL, { ...params, signature: sign({ ...params, category: 'warehouse' }, merchant.api_secret) });
    expect([res.status, res.body.code]).toEqual([401, 40102]);
    expect(merchant.api_key).toMatch(/^mk_test_/);
    expect(res.body.data).toEqual({
      canonical: `api_key=${params.api_key}&category=processor&customer=张三&nonce=${params.nonce}&timestamp=${params.timestamp}`,
    });
    expect(res.body.msg).toMatch(/data\.canonical/);
    expect(res.raw).not.toContain(merchant.api_secret);

    const live = await api.operator.merchants.create({ name: 'live shop', mode: 'live' });
    expect(live.api_key).toMatch(/^mk_live_/);
    const liveParams = { api_key: live.api_key, timestamp: now(), nonce: newNonce() };
    const refused = await post(api.app, URL, { ...liveParams, signature: sign(liveParams, 'not-the-secret') });
    expect([refused.status, refused.body.code, refused.body.msg, refused.body.data]).toEqual([401, 40102, 'Signature does not match', null]);
    expect(refused.raw).not.toContain('api_key=');
  });

  it('accepts an uppercase signature', async () => {
    const params = signed(merchant);
    params.signature = String(params.signature).toUpperCase();
    expect((await post(api.app, URL, params)).body.code).toBe(1);
  });

  /**
   * Sends a request whose timestamp is `offset` seconds from the server's clock. The server
   * shares this process's clock; an answer is kept only when no second ticked while it was
   * made, so the server's "now" is known exactly.
   */
  async function codeAtOffset(offset: number): Promise<number> {
    for (let tries = 0; tries < 20; tries++) {
      const before = now();
      const params = { api_key: merchant.api_key, timestamp: before + offset, nonce: newNonce() };
      const res = await post(api.app, URL, { ...params, signature: sign(params, merchant.api_secret) });
      if (now() === before) return res.body.code;
    }
    throw new Error('the clock ticked during every try');
  }

  it('accepts its edge exactly: the tolerance is accepted, one second past it is 40103', async () => {
    const tolerance = api.config.authToleranceSeconds;
    const answers: [number, number][] = [];
    for (const offset of [-tolerance - 1, -tolerance, tolerance, tolerance + 1]) answers.push([offset, await codeAtOffset(offset)]);
    expect(answers).toEqual([
      [-tolerance - 1, 40103],
      [-tolerance, 1],
      [tolerance, 1],
      [tolerance + 1, 40103],
    ]);
  });

  it('40103 says the window, and that a 13-digit timestamp is milliseconds', async () => {
    const stale = { api_key: merchant.api_key, timestamp: now() - 3600, nonce: newNonce() };
    const old = await post(api.app, URL, { ...stale, signature: sign(stale, merchant.api_secret) });
    expect([old.body.code, old.body.msg]).toEqual([
      40103,
      `Timestamp outside the allowed window: it must be Unix seconds within ${api.config.authToleranceSeconds} s of the server's clock (the answer's time)`,
    ]);
    const millis = { api_key: merchant.api_key, timestamp: Date.now(), nonce: newNonce() };
    const res = await post(api.app, URL, { ...millis, signature: sign(millis, merchant.api_secret) });
    expect(res.body.code).toBe(40103);
    expect(res.body.msg).toMatch(/looks like milliseconds: send Unix seconds/);
  });

  it('accepts the timestamp as a string of digits', async () => {
    const params = { api_key: merchant.api_key, timestamp: String(now()), nonce: newNonce() };
    expect((await post(api.app, URL, { ...params, signature: sign(params, merchant.api_secret) })).body.code).toBe(1);
  });

  it('answers 40104 for a replayed nonce, and a failed signature does not burn the nonce', async () => {
    const params = signed(merchant);
    const forged = { ...params, signature: 'f'.repeat(64) };
    expect((await post(api.app, URL, forged)).body.code).toBe(40102);
    expect((await post(api.app, URL, params)).body.code).toBe(1);
    const replay = await post(api.app, URL, params);
    expect([replay.status, replay.body.code]).toEqual([401, 40104]);
  });

  it('keeps a used nonce for twice the timestamp tolerance plus a margin of at least 5 s, shared in Redis', async () => {
    const params = signed(merchant);
    expect((await post(api.app, URL, params)).body.code).toBe(1);
    const redis = api.app.get(Redis);
    const ttl = await redis.ttl(`nonce:${merchant.api_key}:${String(params.nonce)}`);
    expect(NONCE_MARGIN_SECONDS).toBeGreaterThanOrEqual(5);
    expect(ttl).toBeGreaterThan(2 * api.config.authToleranceSeconds + NONCE_MARGIN_SECONDS - 5);
    expect(ttl).toBeLessThanOrEqual(2 * api.config.authToleranceSeconds + NONCE_MARGIN_SECONDS);
  });

  it('accepts a 64-character nonce', async () => {
    const params = { api_key: merchant.api_key, timestamp: now(), nonce: 'b'.repeat(64) };
    expect((await post(api.app, URL, { ...params, signature: sign(params, merchant.api_secret) })).body.code).toBe(1);
  });

  it('lets exactly one of 12 concurrent requests with one nonce pass', async () => {
    const params = signed(merchant);
    const answers = await Promise.all(Array.from({ length: 12 }, () => post(api.app, URL, params)));
    const codes = answers.map((a) => a.body.code).sort();
    expect(codes.filter((c) => c === 1)).toHaveLength(1);
    expect(codes.filter((c) => c === 40104)).toHaveLength(11);
  });

  it('checks in the contract order: a disabled merchant is 40300 even with a bad signature and timestamp', async () => {
    const other = await api.operator.merchants.create({ name: 'to-disable' });
    await api.operator.merchants.setStatus(other.id, 'disabled');
    const stale = { api_key: other.api_key, timestamp: now() - 10_000, nonce: newNonce(), signature: '0'.repeat(64) };
    const res = await post(api.app, URL, stale);
    expect([res.status, res.body.code]).toEqual([403, 40300]);
    // 40103 comes before 40102: a stale timestamp with a bad signature is 40103.
    expect((await post(api.app, URL, { ...stale, api_key: merchant.api_key })).body.code).toBe(40103);
    await api.operator.merchants.setStatus(other.id, 'active');
    // The first answer cached the disabled merchant: the enable is heard by NOTIFY.
    expect(await answersOnceHeard(other, 1)).toBe(1);
  });

  /** The code a request signed with `creds` answers once the rotation was heard (NOTIFY; how fast is bench:contract-timings' figure). */
  async function answersOnceHeard(creds: Pick<Credentials, 'api_key' | 'api_secret'>, code: number): Promise<number> {
    let got = 0;
    await waitFor(async () => (got = (await post(api.app, URL, signed(creds))).body.code) === code, HEARD_WITHIN_MS, `code ${code}`).catch(() => undefined);
    return got;
  }

  it('after a rotation with --grace 0 the old secret is refused at once (a leaked secret)', async () => {
    const m = await api.operator.merchants.create({ name: 'rotating' });
    const rotated = await api.operator.merchants.rotateSecret(m.id, '0');
    expect(rotated.api_key).toBe(m.api_key);
    expect(rotated.previous_secret_valid_until).toBeNull();
    expect(await answersOnceHeard(m, 40102)).toBe(40102);
    expect((await post(api.app, URL, signed(rotated))).body.code).toBe(1);
  });

  it('after a rotation both secrets verify during the grace (24 h by default), the old one 40102 once it ends', async () => {
    const m = await api.operator.merchants.create({ name: 'rotating-with-grace' });
    const before = Date.now();
    const rotated = await api.operator.merchants.rotateSecret(m.id);
    const until = Date.parse(rotated.previous_secret_valid_until!);
    expect(until - before).toBeGreaterThanOrEqual(24 * 3_600_000 - 5_000);
    expect(until - before).toBeLessThanOrEqual(24 * 3_600_000 + 5_000);
    expect(await answersOnceHeard(rotated, 1)).toBe(1);
    expect((await post(api.app, URL, signed(m))).body.code).toBe(1);

    // A second rotation with a short grace: the first secret stops at once, the second verifies until the grace ends.
    const again = await api.operator.merchants.rotateSecret(m.id, '3s');
    expect(await answersOnceHeard(m, 40102)).toBe(40102);
    expect((await post(api.app, URL, signed(rotated))).body.code).toBe(1);
    expect((await post(api.app, URL, signed(again))).body.code).toBe(1);
    // clock: the grace ends at previous_secret_valid_until, announced by nothing
    await new Promise((done) => setTimeout(done, Math.max(0, Date.parse(again.previous_secret_valid_until!) - Date.now() + 50)));
    // Nothing announced the end: the cached copy itself stops using the previous secret on time.
    expect((await post(api.app, URL, signed(rotated))).body.code).toBe(40102);
    expect((await post(api.app, URL, signed(again))).body.code).toBe(1);
  });

  it.each(['-1', '24', 'forever', '31d', '1.5h'])('rotating the secret refuses grace %p and changes nothing', async (grace) => {
    const m = await api.operator.merchants.create({ name: 'bad-grace' });
    // The service names its parameter; the CLI words it as --grace (cli e2e).
    await expect(api.operator.merchants.rotateSecret(m.id, grace)).rejects.toMatchObject({
      field: 'grace',
      reason: expect.stringMatching(/^must be 0 or a duration/),
    });
    expect((await post(api.app, URL, signed(m))).body.code).toBe(1);
  });
});

describe('the nonce window edge (AUTH_TOLERANCE_SECONDS=2)', () => {
  const TOLERANCE = 2;
  let api: TestApi;
  let merchant: Credentials;
  // clock: the nonce window is whole seconds of the wall clock, so these waits are for the clock itself
  const sleepUntil = async (ms: number) => new Promise((done) => setTimeout(done, Math.max(0, ms - Date.now())));

  beforeAll(async () => {
    api = await startTestApi({ AUTH_TOLERANCE_SECONDS: String(TOLERANCE) });
    ({ merchant } = await merchantWithChannels(api.operator));
  });
  afterAll(() => api.close());

  it('a request stamped at the future edge, replayed in the last second its timestamp is accepted, is 40104 (Redis and the PostgreSQL table)', async () => {
    // The embedded mode's table variant, on this test's database, beside the Redis one the API uses.
    const tableNonces = new NonceStore(api.config, api.app.get(DataSource));
    const tableKey = `mk_edge_${Date.now()}`;
    // Start just after a second ticks, so the whole-second clock the server reads is known.
    // clock: start just after a second ticks
    await sleepUntil(Math.ceil(Date.now() / 1000) * 1000 + 20);
    const firstSecond = Math.floor(Date.now() / 1000);
    const fields = { api_key: merchant.api_key, timestamp: firstSecond + TOLERANCE, nonce: newNonce() };
    const request = { ...fields, signature: sign(fields, merchant.api_secret) };
    expect((await post(api.app, URL, request)).body.code).toBe(1);
    expect(await tableNonces.claim(tableKey, fields.nonce)).toBe(true);

    // Twice the tolerance after the first use, the timestamp is still inside the window (now = timestamp + tolerance).
    // clock: twice the tolerance later
    await sleepUntil((firstSecond + 2 * TOLERANCE) * 1000 + 500);
    const replay = await post(api.app, URL, request);
    expect([replay.status, replay.body.code]).toEqual([401, 40104]);
    expect(await tableNonces.claim(tableKey, fields.nonce)).toBe(false);

    // One second later the timestamp has left the window: refused for that, before the nonce is looked at.
    // clock: one second later
    await sleepUntil((firstSecond + 2 * TOLERANCE + 1) * 1000 + 200);
    expect((await post(api.app, URL, request)).body.code).toBe(40103);
  }, 15_000);
});

describe('per api_key rate limit: a steady rate, not a fixed window (RATE_LIMIT_MERCHANT_PER_SECOND=1, BURST=3)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ RATE_LIMIT_MERCHANT_PER_SECOND: '1', RATE_LIMIT_MERCHANT_BURST: '3' });
  });
  afterAll(() => api.close());

  it('spends the burst, then lets one request in per second, whatever the second boundaries', async () => {
    const m = await api.operator.merchants.create({ name: 'steady' });
    const codes = [];
    for (let i = 0; i < 4; i++) codes.push((await post(api.app, URL, signed(m))).body.code);
    expect(codes).toEqual([1, 1, 1, 42900]);
    // clock: one token a second refills the bucket
    await new Promise((r) => setTimeout(r, 1100));
    expect((await post(api.app, URL, signed(m))).body.code).toBe(1);
    const next = await post(api.app, URL, signed(m));
    expect([next.status, next.body.code, next.headers['retry-after']]).toEqual([429, 42900, '1']);
    expect(next.body.msg).toMatch(/^Too many requests for this api_key/);
  });
});

describe('per api_key rate limit', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ RATE_LIMIT_MERCHANT_PER_SECOND: '2', RATE_LIMIT_MERCHANT_BURST: '4' });
  });
  afterAll(() => api.close());

  it('answers 42900 with Retry-After past the burst, for that api_key only', async () => {
    const a = await api.operator.merchants.create({ name: 'busy' });
    const b = await api.operator.merchants.create({ name: 'quiet' });
    const answers = [];
    for (let i = 0; i < 8; i++) answers.push(await post(api.app, URL, signed(a)));
    const limited = answers.filter((r) => r.body.code === 42900);
    expect(limited.length).toBeGreaterThan(0);
    expect(answers.filter((r) => r.body.code === 1).length).toBeGreaterThanOrEqual(4);
    expect(limited[0].status).toBe(429);
    expect(Number(limited[0].headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect((await post(api.app, URL, signed(b))).body.code).toBe(1);
  });
});
