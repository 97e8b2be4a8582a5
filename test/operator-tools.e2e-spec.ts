import { createHash } from 'node:crypto';
import type { INestApplicationContext } from '@nestjs/common';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { QUEUE } from '@app/common';
import { CallbackJobs } from '@app/callbacks';
import { JobQueue } from '@app/queue';
import type { Credentials } from '@app/operator';
import { runCli } from '../apps/cli/src/main';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { CallbackFixtures, CallbackReceiver, waitFor } from './helpers/callbacks';
import { TEST_REDIS_URL } from './helpers/config';
import { completedOrder, createSellOrder } from './helpers/money-out';

const TUNING = { callbackTimeoutMs: 1000, sweepIntervalMs: 300, sweepGraceMs: 1000 };

/** The 3 a.m. tools (issue 29 item 7), run as an operator would, beside a real worker on real PostgreSQL and Redis. */
describe('operator CLI: the on-call tools', () => {
  let api: TestApi;
  let worker: INestApplicationContext;
  let receiver: CallbackReceiver;
  let db: CallbackFixtures;
  let merchant: Credentials;
  let channels: Record<'processor' | 'remotepay' | 'warehouse', number>;
  let env: Record<string, string>;

  beforeAll(async () => {
    receiver = await CallbackReceiver.start();
    // Two failures open a circuit; its probe waits an hour, so what it holds stays held until an operator acts.
    api = await startTestApi({
      CALLBACK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms',
      CALLBACK_ALLOW_PRIVATE: 'true',
      CALLBACK_CIRCUIT_FAILURES: '2',
      CALLBACK_CIRCUIT_PROBE_SECONDS: '3600',
    });
    worker = await createWorkerApp(api.config, { shutdownHooks: false, tuning: TUNING });
    db = await CallbackFixtures.connect(api.databaseUrl);
    ({ merchant, channels } = await merchantWithChannels(api.operator, { notifyUrl: receiver.url }));
    env = {
      DATABASE_URL: api.databaseUrl,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: api.config.queuePrefix,
      // The key testConfig derives for this database: the CLI opens the same check value.
      MASTER_KEY: createHash('sha256').update(`master key of ${api.databaseUrl}`).digest('base64'),
      LOG_LEVEL: 'silent',
    };
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

  async function cli(...argv: string[]): Promise<{ code: number; json: Record<string, unknown> | null; out: string; err: string }> {
    let out = '';
    let err = '';
    const code = await runCli(argv, { env, stdout: (t) => (out += t), stderr: (t) => (err += t) });
    const lines = out.split('\n').filter(Boolean);
    if (code === 0) expect(lines).toHaveLength(1);
    return { code, json: code === 0 ? JSON.parse(lines[0]) : null, out, err };
  }

  it("callback:list --merchant lists the merchant's deliveries newest first, narrowed by --status and --since; --order still works", async () => {
    const ok = await db.insertOrder(merchant.id, channels.remotepay);
    const okEvent = await db.insertEvent(ok.orderId);
    await db.db.query(`UPDATE callback_deliveries SET status = 'succeeded', attempts_made = 1, updated_at = now() - interval '2 hours' WHERE id = $1`, [
      okEvent.deliveryId,
    ]);
    const bad = await db.insertOrder(merchant.id, channels.remotepay);
    const badEvent = await db.insertEvent(bad.orderId);
    await db.db.query(
      `UPDATE callback_deliveries SET status = 'failed', attempts_made = 16, last_error = 'HTTP 500', updated_at = now() - interval '1 hour' WHERE id = $1`,
      [badEvent.deliveryId],
    );
    const oldBad = await db.insertOrder(merchant.id, channels.remotepay);
    const oldBadEvent = await db.insertEvent(oldBad.orderId);
    await db.db.query(`UPDATE callback_deliveries SET status = 'failed', attempts_made = 16, updated_at = now() - interval '3 days' WHERE id = $1`, [
      oldBadEvent.deliveryId,
    ]);

    const all = await cli('callback:list', '--merchant', String(merchant.id));
    const ids = (all.json!.deliveries as { delivery_id: string }[]).map((d) => d.delivery_id);
    expect(ids.indexOf(badEvent.deliveryId)).toBeLessThan(ids.indexOf(okEvent.deliveryId));
    expect(ids.indexOf(okEvent.deliveryId)).toBeLessThan(ids.indexOf(oldBadEvent.deliveryId));

    const since = Math.floor(Date.now() / 1000) - 86_400;
    const failed = await cli('callback:list', '--merchant', String(merchant.id), '--status', 'failed', '--since', String(since));
    expect(failed.json).toEqual({
      merchant_id: merchant.id,
      status: 'failed',
      since,
      deliveries: [
        expect.objectContaining({
          delivery_id: badEvent.deliveryId,
          order_no: bad.orderNo,
          event: 'order.paid',
          status: 'failed',
          attempts_made: 16,
          last_error: 'HTTP 500',
        }),
      ],
    });
    expect((await cli('callback:list', '--order', bad.orderNo)).json).toMatchObject({
      order_no: bad.orderNo,
      deliveries: [{ delivery_id: badEvent.deliveryId }],
    });

    for (const [argv, message] of [
      [['callback:list', '--merchant', String(merchant.id), '--status', 'lost'], /--status must be one of pending, succeeded, failed/],
      [['callback:list', '--merchant', String(merchant.id), '--since', 'yesterday'], /--since must be Unix seconds/],
      [['callback:list', '--order', bad.orderNo, '--merchant', String(merchant.id)], /--order lists one order's deliveries/],
      [['callback:list'], /--order or --merchant is required/],
      [['callback:list', '--merchant', '999999'], /no merchant 999999/],
    ] as [string[], RegExp][]) {
      const res = await cli(...argv);
      expect([argv, res.code, res.out]).toEqual([argv, 2, '']);
      expect(res.err).toMatch(message);
    }
  });

  it('callback:circuits shows an open circuit with since and next probe; callback:circuit:reset closes it and its held deliveries go at once', async () => {
    receiver.respond = () => ({ status: 500, body: 'down' });
    const first = await db.insertOrder(merchant.id, channels.remotepay);
    const firstEvent = await db.insertEvent(first.orderId);
    await api.app.get(CallbackJobs).deliver(firstEvent.deliveryId);
    const destination = `http://127.0.0.1:${receiver.port}`;
    await waitFor(async () => ((await cli('callback:circuits')).json!.open as unknown[]).length > 0, 10_000, 'the circuit to open');
    // A second order's delivery meets the open circuit: parked without spending an attempt.
    const second = await db.insertOrder(merchant.id, channels.remotepay);
    const secondEvent = await db.insertEvent(second.orderId);
    await api.app.get(CallbackJobs).deliver(secondEvent.deliveryId);
    // Both held until the probe: the first's retry, due 100 ms after the failure that opened the circuit, is parked too
    // (until then it waits out its retry delay, and a reset has nothing of it to release): parked, in the key's line.
    const queue = api.app.get(JobQueue).queue(QUEUE.callbacks);
    const line = `${api.config.queuePrefix}:callback-key:{${merchant.id}|http://127.0.0.1:${receiver.port}}:ready`;
    const held = async (id: string) => (await queue.getJobState(id)) === 'delayed' && (await api.app.get(Redis).zscore(line, id)) !== null;
    await waitFor(async () => (await held(firstEvent.deliveryId)) && (await held(secondEvent.deliveryId)), 10_000, 'both deliveries to be held');

    const circuits = await cli('callback:circuits');
    const open = (circuits.json!.open as Record<string, unknown>[]).find((c) => c.merchant_id === merchant.id && c.destination === destination);
    expect(open).toEqual({
      merchant_id: merchant.id,
      destination,
      consecutive_failures: expect.any(Number),
      since: expect.any(String),
      next_probe_at: expect.any(String),
      last_failure_at: expect.any(String),
      held_deliveries: 2,
    });
    expect(Date.parse(String(open!.next_probe_at))).toBeGreaterThan(Date.now() + 30 * 60_000);
    expect((await db.delivery(secondEvent.deliveryId)).attempts_made).toBe(0);

    receiver.respond = () => ({ status: 200, body: 'success' });
    const reset = await cli('callback:circuit:reset', '--merchant', String(merchant.id), '--destination', receiver.url);
    expect(reset.json).toMatchObject({ merchant_id: merchant.id, destination, was_open: true });
    expect(reset.json!.released).toBe(2);
    expect(reset.json!.woken).toBe(2);
    // Long before the hour-long probe: the held delivery is sent once the circuit is closed.
    await waitFor(() => db.ended(secondEvent.deliveryId), 10_000, 'the held delivery to be sent');
    expect((await db.delivery(secondEvent.deliveryId)).status).toBe('succeeded');
    expect((await cli('callback:circuits')).json!.open).toEqual([]);

    const unknown = await cli('callback:circuit:reset', '--merchant', String(merchant.id), '--destination', 'https://nobody.example');
    expect([unknown.code, unknown.out]).toEqual([2, '']);
    expect(unknown.err).toMatch(/no circuit for merchant \d+ and https:\/\/nobody.example:443/);
    const notUrl = await cli('callback:circuit:reset', '--merchant', String(merchant.id), '--destination', 'nobody');
    expect([notUrl.code, notUrl.out, notUrl.err]).toEqual([
      2,
      '',
      'error: --destination must be an http or https URL, e.g. https://shop.example:443 as callback:circuits prints it\n',
    ]);
  });

  it("order:show prints the order, its timeline, ledger lines and deliveries, and never the payee's full account", async () => {
    const paid = await completedOrder(api.app, merchant, { cny_amount: '200.00', paychannel_id: channels.remotepay });
    const shown = await cli('order:show', paid.order_no);
    expect(shown.json).toMatchObject({
      order: { order_no: paid.order_no, merchant_id: merchant.id, status: 'completed', cny_fen: '20000' },
      events: [{ type: 'order.paid' }, { type: 'order.completed' }],
      refunds: [],
      payout: null,
    });
    expect((shown.json!.ledger as { kind: string; amount_fen: number }[]).find((l) => l.kind === 'order_credit')).toMatchObject({
      amount_fen: expect.any(Number),
    });
    expect((shown.json!.deliveries as { event: string }[]).map((d) => d.event).sort()).toEqual(['order.completed', 'order.paid']);
    expect(shown.out).not.toMatch(/request_hash|api_secret/);

    const sell = await createSellOrder(api.app, merchant, { cny_amount: '30.00', paychannel_id: channels.remotepay });
    expect(sell.body.code).toBe(1);
    const payout = await cli('order:show', sell.body.data.order_no);
    expect(payout.json!.payout).toMatchObject({ payee_name: '张三', payee_bank: '中国工商银行', payee_account_masked: expect.stringContaining('1234') });
    expect(payout.out).not.toContain('6222021234561234');
    expect(payout.out).not.toContain('payee_account_enc');

    const missing = await cli('order:show', '2099010100000000000000');
    expect([missing.code, missing.out, missing.err]).toEqual([2, '', 'error: no order 2099010100000000000000\n']);
  });

  it('order:stuck lists orders paid long ago that never completed, and refunds and payouts not ended', async () => {
    await completedOrder(api.app, merchant, { cny_amount: '50.00', paychannel_id: channels.remotepay });
    // Paused, and their jobs in flight done: the workers' sweep would confirm the stuck order and settle the payout under the test.
    expect((await cli('worker:pause')).code).toBe(0);
    await waitFor(
      async () => Object.values(((await cli('worker:status')).json as { queues: Record<string, { active: number }> }).queues).every((q) => q.active === 0),
      10_000,
      'no job in flight',
    );
    try {
      const stuck = await db.insertOrder(merchant.id, channels.remotepay, { status: 'paid' });
      await db.db.query(`UPDATE orders SET updated_at = now() - interval '2 hours' WHERE id = $1`, [stuck.orderId]);
      const fresh = await db.insertOrder(merchant.id, channels.remotepay, { status: 'paid' });

      const refunded = await db.insertOrder(merchant.id, channels.remotepay, { status: 'paid' });
      await db.db.query(`UPDATE orders SET status = 'completed' WHERE id = $1`, [refunded.orderId]);
      await db.db.query(
        `INSERT INTO refunds (refund_no, merchant_id, order_id, order_no, merchant_refund_no, refund_fen, request_hash, status, created_at, updated_at)
         VALUES ('R' || substr($1, 2), $2, $3, $1, 'stuck-refund', 100, 'h', 'processing', now() - interval '3 hours', now())`,
        [refunded.orderNo, merchant.id, refunded.orderId],
      );
      const sell = await createSellOrder(api.app, merchant, { cny_amount: '10.00', paychannel_id: channels.remotepay });
      expect(sell.body.code).toBe(1);
      await db.db.query(`UPDATE payouts SET attempted_at = now() - interval '4 hours' WHERE order_id = (SELECT id FROM orders WHERE order_no = $1)`, [
        sell.body.data.order_no,
      ]);
      const listed = await cli('order:stuck', '--older-than', '1h');
      const items = listed.json!.stuck as { kind: string; order_no: string; refund_no: string | null; status: string }[];
      const orders = items.filter((s) => s.kind === 'order').map((s) => s.order_no);
      expect(orders).toContain(stuck.orderNo);
      expect(orders).not.toContain(fresh.orderNo);
      expect(items).toContainEqual(
        expect.objectContaining({ kind: 'refund', order_no: refunded.orderNo, refund_no: `R${refunded.orderNo.slice(1)}`, status: 'processing' }),
      );
      expect(items).toContainEqual(expect.objectContaining({ kind: 'payout', order_no: sell.body.data.order_no }));
      expect(listed.json!.older_than).toBe('1h');
      const bad = await cli('order:stuck', '--older-than', 'long');
      expect([bad.code, bad.out, bad.err]).toEqual([2, '', 'error: --older-than must be a duration such as 15m, 2h or 1d\n']);
    } finally {
      expect((await cli('worker:resume')).code).toBe(0);
    }
  });

  it('worker:pause stops every worker taking jobs while the process keeps running; worker:resume lets the waiting job go', async () => {
    const paused = await cli('worker:pause');
    expect(paused.json).toMatchObject({ queues: { [QUEUE.orders]: { paused: true }, [QUEUE.callbacks]: { paused: true } } });
    const queue = new Queue(QUEUE.callbacks, { connection: { url: TEST_REDIS_URL }, prefix: api.config.queuePrefix });
    try {
      expect(await queue.isPaused()).toBe(true);
      const order = await db.insertOrder(merchant.id, channels.remotepay);
      const event = await db.insertEvent(order.orderId);
      await api.app.get(CallbackJobs).deliver(event.deliveryId);
      // Paused: the job waits in the queue, no worker takes it.
      expect(await (await queue.getJob(event.deliveryId))!.getState()).toMatch(/^(waiting|paused)$/);
      const again = (await cli('worker:pause')).json as { queues: Record<string, { paused: boolean; waiting: number }> };
      expect(again.queues[QUEUE.callbacks].paused).toBe(true);
      expect(again.queues[QUEUE.callbacks].waiting).toBeGreaterThanOrEqual(1);
      expect(receiver.forEvent(event.eventId)).toHaveLength(0);

      // worker:status reads without changing anything.
      expect((await cli('worker:status')).json).toMatchObject({ queues: { [QUEUE.callbacks]: { paused: true } } });
      const resumed = await cli('worker:resume');
      expect(resumed.json).toMatchObject({ queues: { [QUEUE.orders]: { paused: false }, [QUEUE.callbacks]: { paused: false } } });
      await waitFor(() => db.ended(event.deliveryId), 10_000, 'the delivery after resume');
      expect(receiver.forEvent(event.eventId)).toHaveLength(1);
      expect((await cli('worker:status')).json).toMatchObject({ queues: { [QUEUE.orders]: { paused: false }, [QUEUE.callbacks]: { paused: false } } });
    } finally {
      await queue.close();
    }
  });
});
