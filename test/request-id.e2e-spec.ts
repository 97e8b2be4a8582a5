import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { Client } from 'pg';
import { randomBytes } from 'node:crypto';
import { type TestApi, merchantWithChannels, signed, startTestApi } from './helpers/api';
import { TEST_REDIS_URL } from './helpers/config';
import { testQueuePrefix } from './helpers/redis-keys';
import { freePort } from './helpers/free-port';
import { PortalClient, inviteAndAccept } from './helpers/portal';
import { type Running, launch, stopProcess } from './helpers/processes';
import { waitFor } from './helpers/callbacks';

const API_MAIN = resolve(__dirname, '../dist/apps/api/src/main.js');

describe('X-Request-Id: one id a shop can quote, on every answer and in the access log', () => {
  let api: TestApi;
  let compiled: Running;
  let base: string;
  let merchant: { api_key: string; api_secret: string; id: number };
  let channelId: number;

  /** The compiled API's access line of one request id, once written. */
  const accessLine = (id: string): Promise<Record<string, unknown>> =>
    waitFor(
      () =>
        compiled
          .output()
          .split('\n')
          .find((l) => l.includes(`"request_id":"${id}"`) && l.includes('request completed')),
      10_000,
      `the access line of ${id}`,
    ).then((line) => JSON.parse(line) as Record<string, unknown>);

  beforeAll(async () => {
    api = await startTestApi();
    const made = await merchantWithChannels(api.operator);
    merchant = made.merchant;
    channelId = made.channels.processor;
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    compiled = launch('api', API_MAIN, {
      PORT: String(port),
      DATABASE_URL: api.databaseUrl,
      REDIS_URL: TEST_REDIS_URL,
      MASTER_KEY: api.config.masterKey.toString('base64'),
      QUEUE_PREFIX: testQueuePrefix(),
      SANDBOX_ENABLED: 'true',
      LOG_LEVEL: 'info',
    });
    await waitFor(async () => (await fetch(`${base}/ready`).catch(() => null))?.ok === true, 30_000);
  });

  afterAll(async () => {
    await stopProcess(compiled);
    await api.close();
  });

  const call = (headers: Record<string, string>, body: Record<string, unknown>) =>
    fetch(`${base}/api/merchant/getPayChannels`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  it('echoes the id the client sent and logs the request under it, with the merchant and never the secret or signature', async () => {
    const id = `shop-${randomBytes(6).toString('hex')}`;
    const body = signed(merchant);
    const res = await call({ 'x-request-id': id }, body);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe(id);
    const line = await waitFor(
      () =>
        compiled
          .output()
          .split('\n')
          .find((l) => l.includes(`"request_id":"${id}"`) && l.includes('request completed')),
      10_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; the API printed:\n${compiled.output().slice(-3000)}`);
    });
    const entry = JSON.parse(line) as Record<string, unknown>;
    expect(entry).toMatchObject({
      method: 'POST',
      path: '/api/merchant/getPayChannels',
      route: '/api/merchant/getPayChannels',
      status: 200,
      merchant_id: merchant.id,
    });
    expect(typeof entry.duration_ms).toBe('number');
    expect(line).not.toContain(merchant.api_secret);
    expect(line).not.toContain(String(body.signature));
  });

  it("createOrder's access line carries its order_no and merchant_order_no, so the runbook's search by order_no finds it", async () => {
    const id = `create-${randomBytes(6).toString('hex')}`;
    const res = await fetch(`${base}/api/merchant/createOrder`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': id },
      body: JSON.stringify(
        signed(merchant, { order_type: 1, paychannel_id: channelId, paychannel_paymethod: 'alipay', cny_amount: '12.00', merchant_order_no: id }),
      ),
    });
    const answer = (await res.json()) as { code: number; data: { order_no: string } };
    expect(answer.code).toBe(1);
    expect(await accessLine(id)).toMatchObject({ route: '/api/merchant/createOrder', status: 200, order_no: answer.data.order_no, merchant_order_no: id });
  });

  it('the region routes are access-logged too (answered before Nest, at full speed)', async () => {
    const id = `region-${randomBytes(6).toString('hex')}`;
    const res = await fetch(`${base}/addons/paychannel/channel/processor/provinceList`, { headers: { 'x-request-id': id } });
    expect(res.status).toBe(200);
    expect(await accessLine(id)).toMatchObject({
      method: 'GET',
      path: '/addons/paychannel/channel/processor/provinceList',
      route: '/addons/paychannel/channel/processor/provinceList',
      status: 200,
    });
  });

  it('replaces an id that could forge a log line with one of its own, and answers an error with it too', async () => {
    const res = await call({ 'x-request-id': 'x" {"level":60}' }, { api_key: 'mk_test_nobody' });
    expect(res.status).toBe(401);
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('keeps an id of at most 64 of [A-Za-z0-9_-] (SPEC 3) and replaces a longer one, or one with another character', async () => {
    const longest = 'A-z_9'.repeat(12) + 'abcd';
    expect(longest).toHaveLength(64);
    expect((await call({ 'x-request-id': longest }, {})).headers.get('x-request-id')).toBe(longest);
    for (const refused of [`${longest}e`, 'shop.order:1', 'a b']) {
      expect([refused, (await call({ 'x-request-id': refused }, {})).headers.get('x-request-id')]).toEqual([refused, expect.stringMatching(/^[0-9a-f-]{36}$/)]);
    }
  });

  it('names its database connections, so pg_stat_activity tells the API from the worker and the CLI', async () => {
    const client = new Client({ connectionString: api.databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ application_name: string }>(
        `SELECT DISTINCT application_name FROM pg_stat_activity WHERE datname = current_database()`,
      );
      expect(rows.map((row) => row.application_name)).toEqual(expect.arrayContaining(['merchant-pay-api', 'merchant-pay-cli']));
    } finally {
      await client.end();
    }
  });

  it('shows the id on a portal error page, so a merchant can quote it', async () => {
    const client = await inviteAndAccept(api.app, api.operator, merchant.id, `ops-${randomBytes(3).toString('hex')}@shop.example`, new PortalClient(api.app));
    const page = await client.get('/portal/orders/00000000000000000000', { 'x-request-id': 'portal-quote-1' });
    expect(page.status).toBe(404);
    expect(page.html).toContain('portal-quote-1');
  });
});

describe('a Redis outage in the API log: one line when it starts, never a stack per request', () => {
  it('20 signed requests answered 50300 while Redis is down leave one outage line and one Redis line, no stack', async () => {
    const api = await startTestApi();
    const { merchant } = await merchantWithChannels(api.operator);
    const redisPort = await freePort();
    const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const compiled = launch('api', API_MAIN, {
      PORT: String(port),
      DATABASE_URL: api.databaseUrl,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      MASTER_KEY: api.config.masterKey.toString('base64'),
      QUEUE_PREFIX: testQueuePrefix(),
      LOG_LEVEL: 'info',
    });
    try {
      await waitFor(async () => (await fetch(`${base}/ready`).catch(() => null))?.ok === true, 30_000, 'the API ready');
      redis.kill('SIGKILL');
      await new Promise((done) => (redis.exitCode === null && redis.signalCode === null ? redis.once('exit', done) : done(null)));
      const codes: number[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`${base}/api/merchant/getPayChannels`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(signed(merchant)),
        });
        codes.push(((await res.json()) as { code: number }).code);
      }
      expect(new Set(codes)).toEqual(new Set([50300]));
      const lines = await waitFor(() => {
        const all = compiled
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { level: number; msg: string; err?: unknown });
        // The Redis line comes with ioredis's first failed reconnection, which may follow the 20 answers.
        return all.filter((l) => l.msg === 'request completed').length >= 20 && all.some((l) => /^Redis does not answer/.test(l.msg)) && all;
      }, 10_000).catch((err: Error) => {
        throw new Error(`${err.message}; the API printed:\n${compiled.output().slice(-3000)}`);
      });
      const warnings = lines.filter((l) => l.level >= 40);
      expect(warnings.filter((l) => /requests answer 50300/.test(l.msg))).toHaveLength(1);
      expect(warnings.filter((l) => /^Redis does not answer/.test(l.msg))).toHaveLength(1);
      // No stack, raw or inside a JSON string.
      expect(compiled.output()).not.toMatch(/(\n|\\n)\s+at /);
      expect(warnings.length).toBeLessThanOrEqual(4);
    } finally {
      redis.kill('SIGKILL');
      await stopProcess(compiled);
      await api.close();
    }
  }, 60_000);
});
