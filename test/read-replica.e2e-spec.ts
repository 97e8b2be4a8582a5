import { type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Client } from 'pg';
import { OrderRepository } from '@app/db';
import { type Credentials, OperatorModule } from '@app/operator';
import { createApiApp } from '../apps/api/src/create-api-app';
import { merchantWithChannels, post, signed } from './helpers/api';
import { testConfig } from './helpers/config';
import { createTestDatabase } from './helpers/database';
import { operatorServices } from './helpers/operator-services';
import { createOrder, orderDetail } from './helpers/orders';
import { removeTestKeys } from './helpers/redis-keys';
import { waitFor } from './helpers/callbacks';

/**
 * TEST_REPLICA_URL: a streaming replica of the test server (.ci/pgbouncer.sh makes one with
 * pg_basebackup and starts it on a port of its own), as postgres://user@host:port. The apps get
 * DATABASE_REPLICA_URL on it; the spec pauses its replay to tell where each read was served.
 */
const REPLICA = process.env.TEST_REPLICA_URL;
const describeWithReplica = REPLICA ? describe : describe.skip;
if (!REPLICA)
  console.warn('read-replica.e2e-spec: skipped, TEST_REPLICA_URL is not set (.ci/pgbouncer.sh sets it, with a streaming replica of the test server)');

/** Waits on `check` (a sign of progress) for at most `tries` x 100 ms. */
async function until(what: string, check: () => Promise<boolean>, tries = 600): Promise<void> {
  await waitFor(check, tries * 100, what);
}

describeWithReplica('DATABASE_REPLICA_URL: the merchant lists read on a streaming replica (SPEC 10)', () => {
  let app: NestFastifyApplication;
  let cli: INestApplicationContext;
  let replica: Client;
  let merchant: Credentials;
  let channel: number;
  let databaseUrl: string;
  let queuePrefix: string;

  const listed = async (): Promise<string[]> => {
    const res = await post<{ list: { order_no: string }[] }>(app, '/api/merchant/orderQueryList', signed(merchant, { page: 1, limit: 50 }));
    expect(res.body.code).toBe(1);
    return res.body.data.list.map((o) => o.order_no);
  };

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const name = new URL(databaseUrl).pathname.slice(1);
    const replicaUrl = `${REPLICA!.replace(/\/+$/, '')}/${name}`;
    // The new database reaches the replica by streaming like any write: wait for it there before the app connects.
    await until('the test database on the replica', async () => {
      const probe = new Client({ connectionString: `${REPLICA!.replace(/\/+$/, '')}/postgres` });
      await probe.connect();
      try {
        return (await probe.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [name])).rowCount === 1;
      } finally {
        await probe.end();
      }
    });
    replica = new Client({ connectionString: replicaUrl });
    await replica.connect();
    expect((await replica.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r')).rows[0].r).toBe(true);
    const config = testConfig(databaseUrl, { DATABASE_REPLICA_URL: replicaUrl });
    queuePrefix = config.queuePrefix;
    app = await createApiApp(config);
    cli = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
    const made = await merchantWithChannels(operatorServices(cli));
    merchant = made.merchant;
    channel = made.channels.processor;
  });

  afterAll(async () => {
    await replica?.query('SELECT pg_wal_replay_resume()').catch(() => undefined);
    await replica?.end();
    await cli?.close();
    await app?.close();
    if (databaseUrl) await removeTestKeys(queuePrefix, databaseUrl);
  });

  it("lists from the replica, while an order's detail right after its create answers from the primary", async () => {
    const first = await createOrder(app, merchant, { cny_amount: '10.00', paychannel_id: channel });
    expect(first.body.code).toBe(1);
    await until('the first order in the list, as the replica replays it', async () => (await listed()).includes(first.body.data.order_no));

    // Replay paused: the replica stays where it is, whatever the primary writes next.
    await replica.query('SELECT pg_wal_replay_pause()');
    await until('replay paused', async () => (await replica.query<{ s: string }>('SELECT pg_get_wal_replay_pause_state() AS s')).rows[0].s === 'paused');
    const second = await createOrder(app, merchant, { cny_amount: '20.00', paychannel_id: channel });
    expect(second.body.code).toBe(1);
    const orderNo = second.body.data.order_no;

    // Read-your-writes: the detail is the primary's.
    const detail = await orderDetail(app, merchant, orderNo);
    expect(detail.body).toMatchObject({ code: 1, data: { order_no: orderNo, status: 'pending', cny_amount: '20.00' } });
    // The list, and the export's batches, are the replica's: the order is not there yet.
    expect(await listed()).toEqual([first.body.data.order_no]);
    const batch = await app.get(OrderRepository).listBatch(merchant.id, { limit: 50 }, null);
    expect(batch.map((o) => o.orderNo)).toEqual([first.body.data.order_no]);

    await replica.query('SELECT pg_wal_replay_resume()');
    await until('the second order in the list once replay resumes', async () => (await listed()).includes(orderNo));
    expect(await listed()).toEqual([orderNo, first.body.data.order_no]);
  });
});
