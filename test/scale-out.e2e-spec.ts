import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Client } from 'pg';
import { type AppConfig } from '@app/common';
import { type Credentials, OperatorModule } from '@app/operator';
import { signed, type Envelope } from './helpers/api';
import { CallbackReceiver, flushQueueKeys, sleep, waitFor } from './helpers/callbacks';
import { testConfig } from './helpers/config';
import { createTestDatabase } from './helpers/database';
import { freePort } from './helpers/free-port';
import { type Running, launch, stopProcess, notifySandboxPaid } from './helpers/processes';
import { linkedSandboxChannel, operatorServices } from './helpers/operator-services';

const API_MAIN = resolve(__dirname, '../dist/apps/api/src/main.js');
const WORKER_MAIN = resolve(__dirname, '../dist/apps/worker/src/main.js');

describe('scale-out: two API processes and two workers on one PostgreSQL and one Redis', () => {
  const processes: Running[] = [];
  let config: AppConfig;
  let cli: INestApplicationContext;
  let db: Client;
  let receiver: CallbackReceiver;
  let merchant: Credentials;
  let channelId: number;
  const secretKey = randomBytes(24).toString('hex');
  const ports: number[] = [];

  const base = (i: number): string => `http://127.0.0.1:${ports[i]}`;

  async function call<T = Record<string, unknown>>(i: number, op: string, body: Record<string, unknown>): Promise<Envelope<T>> {
    const res = await fetch(`${base(i)}/api/merchant/${op}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return (await res.json()) as Envelope<T>;
  }

  beforeAll(async () => {
    for (const main of [API_MAIN, WORKER_MAIN]) if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first (npm test does)`);
    // Its callbacks go to receivers on this machine: the operator takes their 127.0.0.1 notify URLs (SPEC 7 Address).
    config = testConfig(await createTestDatabase(), { CALLBACK_ALLOW_PRIVATE: 'true' });
    cli = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
    const operator = operatorServices(cli);
    db = new Client({ connectionString: config.databaseUrl });
    await db.connect();
    receiver = await CallbackReceiver.start();
    merchant = await operator.merchants.create({ name: 'scale-out', mode: 'test', notifyUrl: receiver.url });
    channelId = await linkedSandboxChannel(operator, secretKey, [merchant.id]);

    const shared = {
      DATABASE_URL: config.databaseUrl,
      REDIS_URL: config.redisUrl!,
      MASTER_KEY: config.masterKey.toString('base64'),
      QUEUE_PREFIX: config.queuePrefix,
      CALLBACK_ALLOW_PRIVATE: 'true',
      SANDBOX_ENABLED: 'true',
      CALLBACK_RETRY_SCHEDULE: '1s,1s,2s',
      LOG_LEVEL: 'warn',
    };
    for (const i of [0, 1]) {
      ports.push(await freePort());
      processes.push(launch(`api${i}`, API_MAIN, { ...shared, PORT: String(ports[i]) }));
      processes.push(launch(`worker${i}`, WORKER_MAIN, { ...shared, LOG_LEVEL: 'info' }));
    }
    for (const p of processes) {
      p.child.once('exit', (code, signal) => {
        if (code !== 0 && signal !== 'SIGTERM') process.stderr.write(`${p.name} exited (${code ?? signal}):\n${p.output()}\n`);
      });
    }
    await waitFor(
      async () => {
        const ready = await Promise.all(
          [0, 1].map((i) =>
            fetch(`${base(i)}/ready`).then(
              (r) => r.status === 200,
              () => false,
            ),
          ),
        );
        return ready.every(Boolean);
      },
      30_000,
      'both API processes ready',
    );
    await waitFor(
      () => processes.filter((p) => p.name.startsWith('worker')).every((p) => p.output().includes('taking jobs')),
      30_000,
      'both workers taking jobs',
    );
  }, 60_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => stopProcess(p)));
    await receiver?.close();
    await db?.end();
    await cli?.close();
    if (config) await flushQueueKeys(config.queuePrefix);
  }, 30_000);

  it('a nonce used on instance A is refused (40104) on instance B, and one request sent to both at once passes once', async () => {
    const request = signed(merchant);
    expect((await call(0, 'getPayChannels', request)).code).toBe(1);
    expect((await call(1, 'getPayChannels', request)).code).toBe(40104);

    for (let round = 0; round < 5; round++) {
      const twice = signed(merchant);
      const codes = (await Promise.all([call(0, 'getPayChannels', twice), call(1, 'getPayChannels', twice)])).map((a) => a.code).sort();
      expect(codes).toEqual([1, 40104]);
    }
  });

  /**
   * Polls both instances until `accepts` holds for each answer. The wait (10 s) is far below the
   * caches' 60 s max age, so passing proves the change was announced; how fast is bench:contract-timings' figure.
   */
  async function bothAccept(request: () => Record<string, unknown>, accepts: (code: number) => boolean): Promise<void> {
    await Promise.all(
      [0, 1].map((i) => waitFor(async () => accepts((await call(i, 'getPayChannels', request())).code), 10_000, `instance ${i} answers the new way`)),
    );
  }

  it('a merchant disabled through the operator service is refused (40300) by both instances once it is announced, and readmitted the same way', async () => {
    const operator = operatorServices(cli);
    const m = await operator.merchants.create({ name: 'cached-on-both' });
    // Both instances have the merchant cached now.
    for (const i of [0, 1]) expect((await call(i, 'getPayChannels', signed(m))).code).toBe(1);

    await operator.merchants.setStatus(m.id, 'disabled');
    await bothAccept(
      () => signed(m),
      (code) => code === 40300,
    );
    await operator.merchants.setStatus(m.id, 'active');
    await bothAccept(
      () => signed(m),
      (code) => code === 1,
    );
  });

  it('after a routine rotation (24 h grace) both instances take the new secret once announced and keep accepting the old one', async () => {
    const operator = operatorServices(cli);
    const m = await operator.merchants.create({ name: 'rotated-with-grace-on-both' });
    for (const i of [0, 1]) expect((await call(i, 'getPayChannels', signed(m))).code).toBe(1);

    const rotated = await operator.merchants.rotateSecret(m.id);
    await bothAccept(
      () => signed(rotated),
      (code) => code === 1,
    );
    for (const i of [0, 1]) expect((await call(i, 'getPayChannels', signed(m))).code).toBe(1);
  });

  it('after a secret rotation with --grace 0 both instances refuse the old secret (40102) once announced and accept the new one', async () => {
    const operator = operatorServices(cli);
    const m = await operator.merchants.create({ name: 'rotated-on-both' });
    for (const i of [0, 1]) expect((await call(i, 'getPayChannels', signed(m))).code).toBe(1);

    const rotated = await operator.merchants.rotateSecret(m.id, '0');
    await bothAccept(
      () => signed(m),
      (code) => code === 40102,
    );
    for (const i of [0, 1]) expect((await call(i, 'getPayChannels', signed(rotated))).code).toBe(1);
  });

  it('notifications sent to both instances concurrently, several times: paid once, confirmed, credited once; each event delivered once per delivery', async () => {
    const created = await call<{ order_no: string; merchant_actual_amount: number }>(
      0,
      'createOrder',
      signed(merchant, { order_type: 1, cny_amount: '88.00', paychannel_id: channelId, paychannel_paymethod: 'alipay' }),
    );
    expect(created.code).toBe(1);
    const orderNo = created.data.order_no;

    const notify = (i: number): Promise<string> => notifySandboxPaid(base(i), channelId, secretKey, orderNo, 8800);
    const answers = await Promise.all(Array.from({ length: 4 }, () => [notify(0), notify(1)]).flat());
    expect(answers).toEqual(Array(8).fill('success'));

    await waitFor(
      async () => (await call<{ status: string }>(1, 'orderQueryDetail', signed(merchant, { order_no: orderNo }))).data.status === 'completed',
      20_000,
      'the order completed',
    );
    const { rows: ledger } = await db.query(
      `SELECT l.kind, l.amount_fen::int AS amount FROM ledger_entries l JOIN orders o ON o.id = l.order_id WHERE o.order_no = $1 ORDER BY l.kind`,
      [orderNo],
    );
    expect(ledger).toEqual([
      { kind: 'order_credit', amount: created.data.merchant_actual_amount },
      { kind: 'order_deposit', amount: 0 },
    ]);
    const { rows: balance } = await db.query(`SELECT available_fen::int AS available FROM balances WHERE merchant_id = $1`, [merchant.id]);
    expect(balance).toEqual([{ available: created.data.merchant_actual_amount }]);
    const { rows: events } = await db.query<{ id: string; type: string }>(
      `SELECT e.id, e.type FROM order_events e JOIN orders o ON o.id = e.order_id WHERE o.order_no = $1 ORDER BY e.seq`,
      [orderNo],
    );
    expect(events.map((e) => e.type)).toEqual(['order.paid', 'order.completed']);

    const deliveriesOf = async (eventId: string): Promise<number> =>
      (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM callback_deliveries WHERE event_id = $1 AND status = 'succeeded'`, [eventId])).rows[0].n;
    // A resend is a new delivery of the latest event, through instance B, once the first is no longer pending.
    await waitFor(async () => (await deliveriesOf(events[1].id)) === 1, 20_000, 'order.completed delivered');
    const resent = await call<{ delivery_id: string }>(1, 'callbackResend', signed(merchant, { order_no: orderNo }));
    expect(resent.data).toEqual({ event_id: events[1].id, event: 'order.completed', delivery_id: expect.any(String) });
    await waitFor(async () => (await deliveriesOf(events[0].id)) === 1 && (await deliveriesOf(events[1].id)) === 2, 20_000, 'three deliveries succeeded');
    // absence check: two workers compete for every job: a duplicate would arrive about now, if at all.
    await sleep(1_500);
    expect(receiver.forEvent(events[0].id)).toHaveLength(1);
    expect(receiver.forEvent(events[1].id)).toHaveLength(2);
    expect(receiver.forEvent(events[1].id).map((c) => c.headers['x-delivery-attempt'])).toEqual(['1', '1']);
  }, 60_000);
});
