import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
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
import { LocalCluster } from './helpers/redis-topology';

const API_MAIN = resolve(__dirname, '../dist/apps/api/src/main.js');
const WORKER_MAIN = resolve(__dirname, '../dist/apps/worker/src/main.js');
/** This spec's own ports: nodes on 47040-47042 (cluster bus 57040-57042). */
const BASE_PORT = Number(process.env.REDISHA_CLUSTER_PORT ?? 47040);
const CIRCUIT_FAILURES = 3;

/**
 * SPEC 10: Redis Cluster. The real API and worker on a local 3-node Cluster (REDIS_CLUSTER_NODES):
 * signed requests (the admission script's nonce, bucket and failure keys in one slot), BullMQ's
 * queues under `{QUEUE_PREFIX}`, the callbacks' destination gate (its Lua scripts, one hash tag per
 * destination): delivery, an order's events in order, a circuit opened by a failing merchant and
 * closed by its recovery. Any script whose keys crossed slots would answer CROSSSLOT here.
 */
describe('Redis Cluster: the API, the queues and the callbacks on three nodes', () => {
  let cluster: LocalCluster;
  let config: AppConfig;
  let cli: INestApplicationContext;
  let db: Client;
  let healthy: CallbackReceiver;
  let flaky: CallbackReceiver;
  let merchant: Credentials;
  let failing: Credentials;
  let channelId: number;
  let flakyDown = true;
  const processes: Running[] = [];
  const secretKey = randomBytes(24).toString('hex');
  let base = '';

  beforeAll(async () => {
    for (const main of [API_MAIN, WORKER_MAIN]) if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first (npm test does)`);
    cluster = await LocalCluster.start(BASE_PORT);
    config = testConfig(await createTestDatabase(), { CALLBACK_ALLOW_PRIVATE: 'true', REDIS_URL: '', REDIS_CLUSTER_NODES: cluster.nodeList });
    cli = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
    const operator = operatorServices(cli);
    db = new Client({ connectionString: config.databaseUrl });
    await db.connect();
    healthy = await CallbackReceiver.start();
    flaky = await CallbackReceiver.start();
    flaky.respond = () => (flakyDown ? { status: 503, body: 'down' } : { status: 200, body: 'success' });
    merchant = await operator.merchants.create({ name: 'cluster', mode: 'test', notifyUrl: healthy.url });
    failing = await operator.merchants.create({ name: 'cluster-flaky', mode: 'test', notifyUrl: flaky.url });
    channelId = await linkedSandboxChannel(operator, secretKey, [merchant.id, failing.id]);

    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const shared = {
      DATABASE_URL: config.databaseUrl,
      // Two of the three: the client learns the third from them.
      REDIS_CLUSTER_NODES: cluster.nodeList.split(',').slice(0, 2).join(','),
      MASTER_KEY: config.masterKey.toString('base64'),
      QUEUE_PREFIX: config.queuePrefix,
      CALLBACK_ALLOW_PRIVATE: 'true',
      SANDBOX_ENABLED: 'true',
      CALLBACK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s',
      CALLBACK_CIRCUIT_FAILURES: String(CIRCUIT_FAILURES),
      CALLBACK_CIRCUIT_PROBE_SECONDS: '1',
      LOG_LEVEL: 'warn',
    };
    processes.push(launch('api', API_MAIN, { ...shared, PORT: String(port) }));
    processes.push(launch('worker', WORKER_MAIN, { ...shared, LOG_LEVEL: 'info' }));
    await appsReady(base, processes[1], processes);
  }, 300_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => stopProcess(p)));
    await healthy?.close();
    await flaky?.close();
    await db?.end();
    await cli?.close();
    await cluster?.stop();
  }, 30_000);

  async function call<T = Record<string, unknown>>(op: string, body: Record<string, unknown>): Promise<Envelope<T>> {
    const res = await fetch(`${base}/api/merchant/${op}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return (await res.json()) as Envelope<T>;
  }

  async function createAndPay(who: Credentials): Promise<string> {
    const created = await call<{ order_no: string }>(
      'createOrder',
      signed(who, { order_type: 1, cny_amount: '10.00', paychannel_id: channelId, paychannel_paymethod: 'alipay' }),
    );
    expect(created.code).toBe(1);
    const orderNo = created.data.order_no;
    expect(await notifySandboxPaid(base, channelId, secretKey, orderNo, 1000)).toBe('success');
    return orderNo;
  }

  async function eventsOf(orderNos: string[]): Promise<{ order_no: string; id: string; type: string }[]> {
    return (
      await db.query<{ order_no: string; id: string; type: string }>(
        `SELECT o.order_no, e.id::text, e.type FROM order_events e JOIN orders o ON o.id = e.order_id WHERE o.order_no = ANY($1) ORDER BY o.order_no, e.seq`,
        [orderNos],
      )
    ).rows;
  }

  it('a signed request is admitted once: its nonce, bucket and failure count share a slot, and a replay is refused (40104)', async () => {
    const request = signed(merchant);
    expect((await call('getPayChannels', request)).code).toBe(1);
    expect((await call('getPayChannels', request)).code).toBe(40104);
    const keys = await cluster.keys();
    expect(keys.filter((k) => k.startsWith(`{${config.queuePrefix}:admission}:nonce:${merchant.api_key}:`))).toHaveLength(1);
    expect(keys.filter((k) => k.startsWith(`{${config.queuePrefix}:admission}:rl:merchant:`))).not.toHaveLength(0);
  });

  it('callbacks are delivered, each order.paid before its order.completed, with every queue key under {QUEUE_PREFIX}', async () => {
    const orders: string[] = [];
    for (let i = 0; i < 8; i++) orders.push(await createAndPay(merchant));
    const events = await waitFor(
      async () => {
        const rows = await eventsOf(orders);
        return rows.length === 2 * orders.length && rows.every((e) => healthy.forEvent(e.id).length >= 1) ? rows : null;
      },
      120_000,
      'every event of the 8 orders delivered',
    );
    for (const orderNo of orders) {
      const [paid, completed] = events.filter((e) => e.order_no === orderNo);
      expect([paid.type, completed.type]).toEqual(['order.paid', 'order.completed']);
      expect(healthy.forEvent(paid.id)[0].at).toBeLessThanOrEqual(healthy.forEvent(completed.id)[0].at);
      expect(healthy.received.indexOf(healthy.forEvent(paid.id)[0])).toBeLessThan(healthy.received.indexOf(healthy.forEvent(completed.id)[0]));
    }
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ledger_entries l JOIN orders o ON o.id = l.order_id WHERE o.order_no = ANY($1) AND l.kind = 'order_credit'`,
      [orders],
    );
    expect(rows[0].n).toBe(orders.length);

    const keys = await cluster.keys();
    const queueKeys = keys.filter((k) => k.includes(':orders:') || k.includes(':callbacks:'));
    expect(queueKeys.length).toBeGreaterThan(0);
    expect(queueKeys.filter((k) => !k.startsWith(`{${config.queuePrefix}}:`))).toEqual([]);
    // Nothing of ours outside its keyspace's tag (the gate's keys, one tag per destination, go once idle).
    const p = config.queuePrefix;
    const tagged = [`{${p}}:`, `{${p}:admission}:`, `{${p}:portal}:`, `${p}:callback-key:{`];
    expect(keys.filter((k) => !tagged.some((t) => k.startsWith(t)))).toEqual([]);
  }, 180_000);

  it("a failing merchant's circuit opens after its failures and closes on its first success; every held callback then arrives", async () => {
    const orders = [await createAndPay(failing), await createAndPay(failing), await createAndPay(failing)];
    const circuit = async () =>
      (await db.query<{ open: boolean }>(`SELECT open_since IS NOT NULL AS open FROM callback_circuits WHERE merchant_id = $1`, [failing.id])).rows[0];
    await waitFor(async () => (await circuit())?.open === true, 120_000, 'the circuit open');
    flakyDown = false;
    const succeeded = async (): Promise<number> =>
      (
        await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM callback_deliveries d JOIN order_events e ON e.id = d.event_id JOIN orders o ON o.id = e.order_id
           WHERE o.order_no = ANY($1) AND d.status = 'succeeded'`,
          [orders],
        )
      ).rows[0].n;
    await waitFor(async () => (await succeeded()) === 2 * orders.length, 120_000, 'every event of the failing merchant delivered after its recovery');
    await waitFor(async () => (await circuit())?.open === false, 60_000, 'the circuit closed');
    for (const e of await eventsOf(orders)) expect(flaky.forEvent(e.id).at(-1)?.body.event).toBe(e.type);
  }, 300_000);

  // Last: it takes the cluster down for good.
  it('a node lost (no replica to take its slots): a signed request answers 50300 (CLUSTERDOWN is retry later), never 50000', async () => {
    const admission = await cluster.ownerOf(`{${config.queuePrefix}:admission}:probe`);
    // Another node than the one holding the admission keys: those still connect, and answer CLUSTERDOWN.
    await cluster.kill(cluster.nodes.find((n) => n.port !== admission)!.port);
    await cluster.awaitDown();
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push((await call('getPayChannels', signed(merchant))).code);
    expect(answers).toEqual([50300, 50300, 50300]);
  }, 120_000);
});
