import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Client } from 'pg';
import { type AppConfig } from '@app/common';
import { type Credentials, OperatorModule } from '@app/operator';
import { signed, type Envelope } from './helpers/api';
import { CallbackReceiver, sleep, waitFor } from './helpers/callbacks';
import { testConfig } from './helpers/config';
import { createTestDatabase } from './helpers/database';
import { freePort } from './helpers/free-port';
import { type Running, appsReady, launch, stopProcess, notifySandboxPaid } from './helpers/processes';
import { linkedSandboxChannel, operatorServices } from './helpers/operator-services';
import { SentinelSet } from './helpers/redis-topology';

const API_MAIN = resolve(__dirname, '../dist/apps/api/src/main.js');
const WORKER_MAIN = resolve(__dirname, '../dist/apps/worker/src/main.js');
/** This spec's own ports (47000-47019): data nodes on 47000-47001, sentinels on 47010-47012. */
const BASE_PORT = Number(process.env.REDISHA_SENTINEL_PORT ?? 47000);

/**
 * SPEC 10: Redis behind Sentinel. The real API and worker run with REDIS_SENTINELS and
 * REDIS_SENTINEL_NAME while a trickle of orders is created and paid through the API; the
 * primary is switched over by the sentinels (SENTINEL FAILOVER) and then killed outright. A
 * merchant retries a request that answered 50300 (Redis between primaries), as it would. In
 * the end every order the API accepted is paid, credited once and completed, and every event
 * of it reached the merchant at least once.
 */
describe('Redis Sentinel: a failover under a trickle of orders and payments loses nothing', () => {
  let redis: SentinelSet;
  let config: AppConfig;
  let cli: INestApplicationContext;
  let db: Client;
  let receiver: CallbackReceiver;
  let merchant: Credentials;
  let channelId: number;
  const processes: Running[] = [];
  const secretKey = randomBytes(24).toString('hex');
  let base = '';

  beforeAll(async () => {
    for (const main of [API_MAIN, WORKER_MAIN]) if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first (npm test does)`);
    redis = await SentinelSet.start(BASE_PORT);
    const sentinelEnv = { REDIS_URL: '', REDIS_SENTINELS: redis.sentinelList, REDIS_SENTINEL_NAME: redis.name };
    config = testConfig(await createTestDatabase(), { CALLBACK_ALLOW_PRIVATE: 'true', ...sentinelEnv });
    cli = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
    const operator = operatorServices(cli);
    db = new Client({ connectionString: config.databaseUrl });
    await db.connect();
    receiver = await CallbackReceiver.start();
    merchant = await operator.merchants.create({ name: 'sentinel', mode: 'test', notifyUrl: receiver.url });
    channelId = await linkedSandboxChannel(operator, secretKey, [merchant.id]);

    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const shared = {
      DATABASE_URL: config.databaseUrl,
      REDIS_SENTINELS: redis.sentinelList,
      REDIS_SENTINEL_NAME: redis.name,
      MASTER_KEY: config.masterKey.toString('base64'),
      QUEUE_PREFIX: config.queuePrefix,
      CALLBACK_ALLOW_PRIVATE: 'true',
      SANDBOX_ENABLED: 'true',
      CALLBACK_RETRY_SCHEDULE: '1s,1s,2s,3s,5s,5s,10s,10s,10s,10s',
      RATE_LIMIT_MERCHANT_PER_SECOND: '100000',
      RATE_LIMIT_MERCHANT_BURST: '100000',
      LOG_LEVEL: 'warn',
    };
    processes.push(launch('api', API_MAIN, { ...shared, PORT: String(port), LOG_LEVEL: 'info' }));
    processes.push(launch('worker', WORKER_MAIN, { ...shared, LOG_LEVEL: 'info' }));
    for (const p of processes) {
      p.child.once('exit', (code, signal) => {
        if (code !== 0 && signal !== 'SIGTERM') process.stderr.write(`${p.name} exited (${code ?? signal}):\n${p.output()}\n`);
      });
    }
    await appsReady(base, processes[1], processes);
  }, 300_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => stopProcess(p)));
    await receiver?.close();
    await db?.end();
    await cli?.close();
    await redis?.stop();
  }, 30_000);

  async function call<T = Record<string, unknown>>(op: string, body: Record<string, unknown>): Promise<Envelope<T> | null> {
    try {
      const res = await fetch(`${base}/api/merchant/${op}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
      return (await res.json()) as Envelope<T>;
    } catch {
      return null;
    }
  }

  /** A merchant's loop: create, then have the channel say paid; a request that failed is sent again (a fresh nonce each time). */
  function trickle(): { paid: string[]; refusals: number[]; stop: () => Promise<void> } {
    const paid: string[] = [];
    const refusals: number[] = [];
    let running = true;
    const loop = (async () => {
      for (let n = 0; running; n++) {
        let orderNo: string | null = null;
        const merchantOrderNo = `sentinel-${n}`;
        while (!orderNo) {
          const created = await call<{ order_no: string }>(
            'createOrder',
            signed(merchant, {
              order_type: 1,
              cny_amount: '12.34',
              paychannel_id: channelId,
              paychannel_paymethod: 'alipay',
              merchant_order_no: merchantOrderNo,
            }),
          );
          if (created?.code === 1) orderNo = created.data.order_no;
          else {
            // Sent again with the same merchant_order_no: an order made whose answer was lost is answered, not made twice (SPEC 5).
            refusals.push(created?.code ?? 0);
            // clock: a client's pause before it sends again while Redis fails over.
            await sleep(100);
          }
        }
        for (;;) {
          const answer = await notifySandboxPaid(base, channelId, secretKey, orderNo, 1234, { signal: AbortSignal.timeout(15_000) }).catch(() => '');
          if (answer === 'success') break;
          refusals.push(-1);
          // clock: the gateway's pause before it notifies again, as a provider retries.
          await sleep(100);
        }
        paid.push(orderNo);
        // clock: the trickle's pace, a few payments a second across the failover.
        await sleep(50);
      }
    })();
    return {
      paid,
      refusals,
      stop: async () => {
        running = false;
        await loop;
      },
    };
  }

  it('switched over, then its primary killed: every accepted order paid, credited once, completed, each event delivered at least once', async () => {
    const load = trickle();
    const paidBy = (n: number, what: string) =>
      waitFor(() => load.paid.length >= n, 60_000, `${n} orders paid (${what})`).catch((err: Error) => {
        process.stderr.write(`refusals: ${JSON.stringify(load.refusals)}\n`);
        for (const p of processes) process.stderr.write(`--- ${p.name} ---\n${p.output().slice(-6000)}\n`);
        throw err;
      });
    await paidBy(5, 'before any failover');

    const first = await redis.primaryPort();
    await redis.failover();
    const second = await redis.awaitNewPrimary(first);
    const afterSwitch = load.paid.length;
    await paidBy(afterSwitch + 5, 'after the switchover');

    // The demoted primary follows the new one; once it is in sync, the new primary crashes.
    await redis.awaitReplicaOf(second);
    await redis.kill(second);
    const third = await redis.awaitNewPrimary(second);
    const afterCrash = load.paid.length;
    await paidBy(afterCrash + 5, 'after the crash');
    await load.stop();

    const accepted = [...load.paid];
    const summary = async () =>
      (
        await db.query<{ completed: number; credits: number; events: string[] }>(
          `SELECT count(*) FILTER (WHERE o.status = 'completed')::int AS completed,
                  (SELECT count(*)::int FROM ledger_entries l JOIN orders x ON x.id = l.order_id WHERE x.order_no = ANY($1) AND l.kind = 'order_credit') AS credits,
                  (SELECT array_agg(e.id::text) FROM order_events e JOIN orders y ON y.id = e.order_id WHERE y.order_no = ANY($1)) AS events
           FROM orders o WHERE o.order_no = ANY($1)`,
          [accepted],
        )
      ).rows[0];
    const settled = await waitFor(
      async () => {
        const s = await summary();
        return s.completed === accepted.length && (s.events ?? []).every((id) => receiver.forEvent(id).length >= 1) ? s : null;
      },
      150_000,
      'every accepted order completed and each of its events delivered',
    );
    expect(settled.completed).toBe(accepted.length);
    expect(settled.credits).toBe(accepted.length);
    // order.paid and order.completed of each.
    expect(settled.events).toHaveLength(2 * accepted.length);
    const { rows: balance } = await db.query<{ available: number }>(`SELECT available_fen::int AS available FROM balances WHERE merchant_id = $1`, [
      merchant.id,
    ]);
    const { rows: credited } = await db.query<{ sum: number }>(
      `SELECT coalesce(sum(l.amount_fen), 0)::int AS sum FROM ledger_entries l JOIN orders o ON o.id = l.order_id WHERE o.order_no = ANY($1) AND l.kind = 'order_credit'`,
      [accepted],
    );
    expect(balance[0].available).toBe(credited[0].sum);
    const deliveredTwice = settled.events.filter((id) => receiver.forEvent(id).length > 1).length;
    process.stdout.write(
      `redis-sentinel: primaries ${first} -> ${second} (switchover) -> ${third} (crash); ${accepted.length} orders paid and credited, ` +
        `${settled.events.length} events delivered (${deliveredTwice} more than once), ${load.refusals.length} requests sent again\n`,
    );
  }, 300_000);
});
