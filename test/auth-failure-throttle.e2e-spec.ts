import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { DomainError, ErrorCode } from '@app/common';
import { type Credentials } from '@app/operator';
import { AuthFailureThrottle } from '../apps/api/src/auth/auth-failure-throttle';
import { createApiApp } from '../apps/api/src/create-api-app';
import { type Answer, type TestApi, merchantWithChannels, signed, startTestApi } from './helpers/api';
import { testConfig } from './helpers/config';
import { sleep } from './helpers/callbacks';

const URL = '/api/merchant/getPayChannels';
/** RATE_LIMIT_AUTH_FAIL_PER_SECOND=2: a burst of 4 failures, refilled every 2 s. */
const PER_SECOND = 2;
const BURST = 2 * PER_SECOND;

async function from(app: NestFastifyApplication, ip: string, body: Record<string, unknown>): Promise<Answer> {
  const res = await app.inject({ method: 'POST', url: URL, remoteAddress: ip, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  return { status: res.statusCode, headers: res.headers, body: res.json(), raw: res.body };
}

describe('failed authentication is throttled per client IP (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  /** A second API instance on the same database and Redis. */
  let other: NestFastifyApplication;
  let merchant: Credentials;
  let forged: () => Record<string, unknown>;

  beforeAll(async () => {
    api = await startTestApi({ RATE_LIMIT_AUTH_FAIL_PER_SECOND: String(PER_SECOND) });
    other = await createApiApp(api.config);
    ({ merchant } = await merchantWithChannels(api.operator));
    forged = () => signed({ api_key: merchant.api_key, api_secret: 'a guess at the secret' });
  });
  afterAll(async () => {
    await other.close();
    await api.close();
  });

  it('past the burst, even a correctly signed request from that IP is 42900 with Retry-After; another IP is not; after the refill it passes', async () => {
    const ip = '198.51.100.10';
    for (let i = 0; i < BURST; i++) expect((await from(api.app, ip, forged())).body.code).toBe(40102);

    const good = await from(api.app, ip, signed(merchant));
    expect([good.status, good.body.code]).toEqual([429, 42900]);
    // The answer says why, so a developer fixes the signing instead of slowing down.
    expect(good.body.msg).toMatch(/^Too many failed authentications from this address/);
    const retryAfter = Number(good.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(2);
    expect((await from(api.app, ip, forged())).body.code).toBe(42900);

    expect((await from(api.app, '198.51.100.20', signed(merchant))).body.code).toBe(1);

    // clock: the block ends when Retry-After says
    await sleep(retryAfter * 1000 + 100);
    expect((await from(api.app, ip, signed(merchant))).body.code).toBe(1);
  });

  it('a blocked request is refused before the merchant lookup: it answers 42900 while the merchants table is gone', async () => {
    const ip = '198.51.100.11';
    const unknownKey = () => signed({ api_key: 'mk_000000000000000000000000', api_secret: 'x' });
    for (let i = 0; i < BURST; i++) expect((await from(api.app, ip, unknownKey())).body.code).toBe(40101);

    // A merchant this instance has not cached yet: its lookup would read the table.
    const uncached = await api.operator.merchants.create({ name: 'never-seen' });
    const db = api.app.get(DataSource);
    await db.query('ALTER TABLE merchants RENAME TO merchants_hidden');
    try {
      expect((await from(api.app, ip, signed(uncached))).body.code).toBe(42900);
      // Control: a request that does reach the lookup now fails on the missing table.
      expect((await from(api.app, '198.51.100.21', signed(uncached))).body.code).toBe(50000);
    } finally {
      await db.query('ALTER TABLE merchants_hidden RENAME TO merchants');
    }
  });

  it('counts each kind of 401 (missing, unknown key, bad signature, stale timestamp, replayed nonce)', async () => {
    const ip = '198.51.100.12';
    const good = signed(merchant);
    expect((await from(api.app, ip, good)).body.code).toBe(1);
    const missing = { ...signed(merchant), nonce: 'x' };
    const unknown = signed({ api_key: 'mk_000000000000000000000001', api_secret: 'x' });
    const stale = signed(merchant, { timestamp: Math.floor(Date.now() / 1000) - 10_000 });
    const codes = [];
    for (const body of [missing, unknown, forged(), stale]) codes.push((await from(api.app, ip, body)).body.code);
    expect(codes).toEqual([40100, 40101, 40102, 40103]);
    expect((await from(api.app, ip, signed(merchant))).body.code).toBe(42900);

    const replayer = '198.51.100.13';
    expect((await from(api.app, replayer, good)).body.code).toBe(40104);
    for (let i = 1; i < BURST; i++) expect((await from(api.app, replayer, good)).body.code).toBe(40104);
    expect((await from(api.app, replayer, signed(merchant))).body.code).toBe(42900);
  });

  it('does not count 40300: a disabled merchant sends its real key, it is not guessing', async () => {
    const ip = '198.51.100.14';
    const disabled = await api.operator.merchants.create({ name: 'disabled' });
    await api.operator.merchants.setStatus(disabled.id, 'disabled');
    for (let i = 0; i < 3 * BURST; i++) expect((await from(api.app, ip, signed(disabled))).body.code).toBe(40300);
    expect((await from(api.app, ip, signed(merchant))).body.code).toBe(1);
  });

  it('is shared through Redis: another instance refuses even a correctly signed request from a blocked address, having seen no failure itself', async () => {
    const ip = '198.51.100.16';
    for (let i = 0; i < BURST; i++) expect((await from(api.app, ip, forged())).body.code).toBe(40102);
    const good = signed(merchant);
    const answer = await from(other, ip, good);
    expect([answer.status, answer.body.code]).toEqual([429, 42900]);
    expect(answer.body.msg).toMatch(/^Too many failed authentications from this address/);
    expect(Number(answer.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Refused before its nonce was claimed: once the block ends, the same request passes.
    // clock: the block ends when Retry-After says
    await sleep(Number(answer.headers['retry-after']) * 1000 + 100);
    expect((await from(other, ip, good)).body.code).toBe(1);
  });

  it('is shared through Redis: another instance refuses the address from its first failure there on', async () => {
    const ip = '198.51.100.15';
    for (let i = 0; i < BURST; i++) expect((await from(api.app, ip, forged())).body.code).toBe(40102);
    const refused = await from(other, ip, forged());
    expect([refused.body.code, refused.body.msg]).toEqual([42900, expect.stringMatching(/^Too many failed authentications from this address/)]);
    expect((await from(other, ip, signed(merchant))).body.code).toBe(42900);
  });
});

describe('AuthFailureThrottle in memory (no Redis: the embedded mode)', () => {
  it('blocks an address after the burst, and only that address, until the refill', async () => {
    const config = testConfig('postgres://postgres@127.0.0.1:5432/unused', {
      REDIS_URL: '',
      QUEUE_BACKEND: 'postgres',
      RATE_LIMIT_AUTH_FAIL_PER_SECOND: String(PER_SECOND),
    });
    const throttle = new AuthFailureThrottle(config);
    const failure = new DomainError(ErrorCode.AuthBadSignature);
    for (let i = 0; i < BURST; i++) {
      expect(() => throttle.refuseIfBlocked('192.0.2.1')).not.toThrow();
      expect(await throttle.recordFailure('192.0.2.1', failure)).toBe(failure);
    }
    let refusal: unknown;
    try {
      throttle.refuseIfBlocked('192.0.2.1');
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(DomainError);
    expect((refusal as DomainError).code).toBe(ErrorCode.RateLimited);
    const retryAfter = Number((refusal as DomainError).headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(() => throttle.refuseIfBlocked('192.0.2.2')).not.toThrow();

    // clock: the block ends when Retry-After says
    await sleep(retryAfter * 1000 + 100);
    expect(() => throttle.refuseIfBlocked('192.0.2.1')).not.toThrow();
  });
});
