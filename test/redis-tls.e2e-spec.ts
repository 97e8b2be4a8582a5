import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Client } from 'pg';
import { type AppConfig } from '@app/common';
import { type Credentials, OperatorModule } from '@app/operator';
import { signed, type Envelope } from './helpers/api';
import { CallbackReceiver, waitFor } from './helpers/callbacks';
import { testConfig } from './helpers/config';
import { createTestDatabase } from './helpers/database';
import { freePort } from './helpers/free-port';
import { type Running, appsReady, launch, stopProcess, notifySandboxPaid } from './helpers/processes';
import { linkedSandboxChannel, operatorServices } from './helpers/operator-services';
import { LocalCluster, SentinelSet, type TlsFiles, makeTlsFiles } from './helpers/redis-topology';

const API_MAIN = resolve(__dirname, '../dist/apps/api/src/main.js');
const WORKER_MAIN = resolve(__dirname, '../dist/apps/worker/src/main.js');
/** This spec's own ports: a Cluster on 47060-47062 (bus 57060-57062), Sentinel's data nodes on 47070-47071, sentinels on 47080-47082. */
const CLUSTER_PORT = Number(process.env.REDISHA_TLS_CLUSTER_PORT ?? 47060);
const SENTINEL_PORT = Number(process.env.REDISHA_TLS_SENTINEL_PORT ?? 47070);

type Topology = { kind: 'cluster'; redis: LocalCluster } | { kind: 'sentinel'; redis: SentinelSet };

/**
 * README "Redis with Sentinel or Cluster", TLS: the real API and worker on a TLS-only Redis
 * Cluster and a TLS-only Sentinel set (no plain-text port open anywhere, the sentinels' and the
 * Cluster bus's links TLS too), trusting a private CA by REDIS_TLS_CA_FILE. A signed request's
 * nonce is spent once, an order is paid, and its callbacks go out (queues and the destination
 * gate over TLS). An API given another CA's file does not connect (no plain-text fallback): it is
 * not ready, and a signed request answers 50300 (retry later), not 50000.
 */
describe('Redis over TLS: the API and the worker on a TLS-only Cluster and Sentinel', () => {
  let dir: string;
  let tls: TlsFiles;
  let otherCa: TlsFiles;
  let config: AppConfig;
  let cli: INestApplicationContext;
  let db: Client;
  let receiver: CallbackReceiver;
  let merchant: Credentials;
  let channelId: number;
  const topologies: Topology[] = [];
  const processes: Running[] = [];
  const secretKey = randomBytes(24).toString('hex');

  beforeAll(async () => {
    for (const main of [API_MAIN, WORKER_MAIN]) if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first (npm test does)`);
    dir = mkdtempSync(join(tmpdir(), 'mp-redis-tls-'));
    tls = await makeTlsFiles(join(dir, 'ours'));
    otherCa = await makeTlsFiles(join(dir, 'other'), 'another-ca');
    topologies.push({ kind: 'cluster', redis: await LocalCluster.start(CLUSTER_PORT, tls) });
    topologies.push({ kind: 'sentinel', redis: await SentinelSet.start(SENTINEL_PORT, 'pay', tls) });
    // The operator's tools on PostgreSQL only: the Redis under test is named to the apps below.
    config = testConfig(await createTestDatabase(), { CALLBACK_ALLOW_PRIVATE: 'true' });
    cli = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
    const operator = operatorServices(cli);
    db = new Client({ connectionString: config.databaseUrl });
    await db.connect();
    receiver = await CallbackReceiver.start();
    merchant = await operator.merchants.create({ name: 'tls', mode: 'test', notifyUrl: receiver.url });
    channelId = await linkedSandboxChannel(operator, secretKey, [merchant.id]);
  }, 300_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => stopProcess(p)));
    await receiver?.close();
    await db?.end();
    await cli?.close();
    await Promise.all(topologies.map((t) => t.redis.stop()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  function redisEnv(t: Topology, ca: string): Record<string, string> {
    const named: Record<string, string> =
      t.kind === 'cluster' ? { REDIS_CLUSTER_NODES: t.redis.nodeList } : { REDIS_SENTINELS: t.redis.sentinelList, REDIS_SENTINEL_NAME: t.redis.name };
    return { ...named, REDIS_TLS: 'true', REDIS_TLS_CA_FILE: ca };
  }

  /** The API (and the worker) on `t`, each queue prefix its own so the two topologies' runs share nothing. */
  async function start(t: Topology, ca: string, withWorker: boolean): Promise<string> {
    const port = await freePort();
    const shared = {
      DATABASE_URL: config.databaseUrl,
      ...redisEnv(t, ca),
      MASTER_KEY: config.masterKey.toString('base64'),
      QUEUE_PREFIX: `${config.queuePrefix}-${t.kind}`,
      CALLBACK_ALLOW_PRIVATE: 'true',
      SANDBOX_ENABLED: 'true',
      CALLBACK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s,1s,1s,1s,1s,1s',
      LOG_LEVEL: 'warn',
    };
    const api = launch(`api-${t.kind}`, API_MAIN, { ...shared, PORT: String(port) });
    processes.push(api);
    const base = `http://127.0.0.1:${port}`;
    if (withWorker) {
      const worker = launch(`worker-${t.kind}`, WORKER_MAIN, { ...shared, LOG_LEVEL: 'info' });
      processes.push(worker);
      await appsReady(base, worker, [api, worker]);
    }
    return base;
  }

  async function call<T = Record<string, unknown>>(base: string, op: string, body: Record<string, unknown>): Promise<Envelope<T>> {
    const res = await fetch(`${base}/api/merchant/${op}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return (await res.json()) as Envelope<T>;
  }

  async function createAndPay(base: string): Promise<string> {
    const created = await call<{ order_no: string }>(
      base,
      'createOrder',
      signed(merchant, { order_type: 1, cny_amount: '10.00', paychannel_id: channelId, paychannel_paymethod: 'alipay' }),
    );
    expect(created.code).toBe(1);
    const orderNo = created.data.order_no;
    expect(await notifySandboxPaid(base, channelId, secretKey, orderNo, 1000)).toBe('success');
    return orderNo;
  }

  it.each(['cluster', 'sentinel'] as const)(
    'on a TLS-only %s: a nonce is spent once, and a paid order gets its callbacks',
    async (kind) => {
      const t = topologies.find((x) => x.kind === kind)!;
      const base = await start(t, tls.ca, true);
      const request = signed(merchant);
      expect((await call(base, 'getPayChannels', request)).code).toBe(1);
      expect((await call(base, 'getPayChannels', request)).code).toBe(40104);
      const orderNo = await createAndPay(base);
      const events = await waitFor(
        async () => {
          const { rows } = await db.query<{ id: string; type: string }>(
            `SELECT e.id::text, e.type FROM order_events e JOIN orders o ON o.id = e.order_id WHERE o.order_no = $1 ORDER BY e.seq`,
            [orderNo],
          );
          return rows.length === 2 && rows.every((e) => receiver.forEvent(e.id).length >= 1) ? rows : null;
        },
        120_000,
        `both callbacks of ${orderNo} delivered`,
      );
      expect(events.map((e) => e.type)).toEqual(['order.paid', 'order.completed']);
      if (t.kind === 'cluster') {
        // The queues' keys are on the Cluster (read over TLS): the jobs went through it, not elsewhere.
        const keys = await t.redis.keys();
        expect(keys.some((k) => k.startsWith(`{${config.queuePrefix}-cluster}:callbacks:`))).toBe(true);
      }
    },
    240_000,
  );

  it.each(['cluster', 'sentinel'] as const)(
    'on a %s, refuses a certificate its CA file did not sign: not ready, a signed request answers 50300',
    async (kind) => {
      const t = topologies.find((x) => x.kind === kind)!;
      const base = await start(t, otherCa.ca, false);
      await waitFor(
        () =>
          fetch(`${base}/health`).then(
            (r) => r.status === 200,
            () => false,
          ),
        60_000,
        'the API listening',
      );
      // absence check: given its time to connect (a verified handshake takes milliseconds here), it never does
      await new Promise((done) => setTimeout(done, 3_000));
      expect((await fetch(`${base}/ready`)).status).toBe(503);
      const answer = await call(base, 'getPayChannels', signed(merchant));
      expect(answer.code).toBe(50300);
      // Said once, not once per reconnection (ioredis retries every few hundred ms; Sentinel's message names each delay).
      expect(
        processes
          .at(-1)!
          .output()
          .match(/"msg":"Redis does not answer/g),
      ).toHaveLength(1);
    },
    120_000,
  );
});
