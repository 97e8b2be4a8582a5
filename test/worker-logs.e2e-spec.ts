import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { CallbackJobs, INTERNAL_FAILURE_TEXT } from '@app/callbacks';
import type { Credentials } from '@app/operator';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { CallbackFixtures, CallbackReceiver, type ReceivedCallback, flushQueueKeys, waitFor } from './helpers/callbacks';
import { type Running, launch, stopProcess } from './helpers/processes';

const WORKER_MAIN = resolve(__dirname, '../dist/apps/worker/src/main.js');
/** 4 attempts 200 ms apart; a destination's circuit opens at its 2nd failure in a row and is probed every second. */
const WORKER_ENV = {
  CALLBACK_RETRY_SCHEDULE: '200ms,200ms,200ms',
  CALLBACK_CIRCUIT_FAILURES: '2',
  CALLBACK_CIRCUIT_PROBE_SECONDS: '1',
  CALLBACK_ALLOW_PRIVATE: 'true',
  LOG_LEVEL: 'info',
};

type Line = Record<string, unknown> & { msg: string; level: number };

/**
 * Issue 29: what an on-call engineer reads. The compiled worker, as production runs it, against
 * real receivers; its stdout parsed as the JSON lines it is. One line per attempt outcome, per
 * circuit change and per failed job, ids as fields, and never a secret, signature or body.
 */
describe('the worker logs: one JSON line per callback outcome, circuit change and failed job', () => {
  let api: TestApi;
  let db: CallbackFixtures;
  let worker: Running;
  const receivers: CallbackReceiver[] = [];
  const merchants: Credentials[] = [];

  const lines = (): Line[] =>
    worker
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Line);
  const about = (deliveryId: string): Line[] => lines().filter((l) => l.delivery_id === deliveryId);

  /** A merchant whose deliveries go to a receiver of its own (its own destination), answering as `respond` says. */
  async function delivery(
    respond: CallbackReceiver['respond'],
  ): Promise<{ merchant: Credentials; receiver: CallbackReceiver; eventId: string; deliveryId: string }> {
    const receiver = await CallbackReceiver.start();
    receiver.respond = respond;
    receivers.push(receiver);
    const { merchant, channels } = await merchantWithChannels(api.operator);
    merchants.push(merchant);
    const order = await db.insertOrder(merchant.id, channels.remotepay, { notifyUrl: receiver.url });
    const { eventId, deliveryId } = await db.insertEvent(order.orderId);
    await api.app.get(CallbackJobs).deliver(deliveryId);
    return { merchant, receiver, eventId, deliveryId };
  }

  beforeAll(async () => {
    if (!existsSync(WORKER_MAIN)) throw new Error(`${WORKER_MAIN} is missing: run npm run build first (npm test does)`);
    api = await startTestApi();
    db = await CallbackFixtures.connect(api.databaseUrl);
    worker = launch('worker', WORKER_MAIN, {
      DATABASE_URL: api.databaseUrl,
      REDIS_URL: api.config.redisUrl!,
      MASTER_KEY: api.config.masterKey.toString('base64'),
      QUEUE_PREFIX: api.config.queuePrefix,
      ...WORKER_ENV,
    });
    await waitFor(() => worker.output().includes('taking jobs'), 60_000, 'the worker taking jobs').catch((err: Error) => {
      throw new Error(`${err.message}; it printed:\n${worker.output().slice(-3000)}`);
    });
  }, 90_000);

  afterAll(async () => {
    if (worker) await stopProcess(worker);
    await Promise.all(receivers.map((r) => r.close()));
    await db?.close();
    await api?.close();
    if (api) await flushQueueKeys(api.config.queuePrefix);
  }, 30_000);

  it('500 then 200: a retry line with its next time, then a delivered line, each with the delivery, event and merchant as fields', async () => {
    const { merchant, receiver, eventId, deliveryId } = await delivery((_c, i) => (i === 0 ? { status: 500, body: 'busy' } : { status: 200, body: 'success' }));
    await waitFor(() => db.ended(deliveryId), 15_000, 'delivered');
    const [retry, delivered] = await waitFor(() => about(deliveryId).length >= 2 && about(deliveryId), 5_000, 'two attempt lines');
    const destination = `http://127.0.0.1:${receiver.port}`;
    expect(retry).toMatchObject({
      level: 30,
      context: 'CallbackDelivery',
      delivery_id: deliveryId,
      event_id: eventId,
      merchant_id: merchant.id,
      destination,
      attempt: 1,
      status: 'retry',
      http_status: 500,
      reason: 'HTTP 500',
    });
    expect(typeof retry.duration_ms).toBe('number');
    expect(Date.parse(retry.next_attempt_at as string)).toBeGreaterThanOrEqual(retry.time as number);
    expect(delivered).toMatchObject({
      delivery_id: deliveryId,
      event_id: eventId,
      merchant_id: merchant.id,
      destination,
      attempt: 2,
      status: 'succeeded',
      http_status: 200,
      reason: null,
    });
    expect(delivered).not.toHaveProperty('next_attempt_at');
    // The ids are fields, not words of the message.
    for (const line of [retry, delivered]) expect(line.msg).not.toMatch(new RegExp(`${deliveryId}|${eventId}`));
  });

  it('410: an ended line (gone) and a failed-job line with the queue, job name and id, and attempts made', async () => {
    const { deliveryId } = await delivery(() => ({ status: 410, body: 'gone' }));
    await waitFor(() => db.ended(deliveryId), 15_000, 'ended');
    const ended = await waitFor(() => about(deliveryId).find((l) => l.status === 'gone'), 5_000, 'the gone line');
    expect(ended).toMatchObject({ level: 40, attempt: 1, http_status: 410, reason: 'HTTP 410' });
    const failed = await waitFor(() => lines().find((l) => l.job_id === deliveryId && l.msg === 'job failed for good'), 5_000, 'the failed-job line');
    expect(failed).toMatchObject({
      level: 40,
      context: 'QueueWorkers',
      queue: 'callbacks',
      job: 'callback.deliver',
      attempts_made: 1,
      final: true,
      err: expect.stringMatching(/410/),
    });
  });

  it('a circuit: opened at its 2nd failure in a row (with the count), a half-open probe, closed by its success', async () => {
    const { merchant, receiver, deliveryId } = await delivery((_c, i) => (i < 2 ? { status: 503, body: 'down' } : { status: 200, body: 'success' }));
    await waitFor(() => db.ended(deliveryId), 20_000, 'delivered through the probe');
    const destination = `http://127.0.0.1:${receiver.port}`;
    const changes = await waitFor(
      () => {
        const found = lines().filter((l) => l.circuit !== undefined && l.destination === destination);
        return found.some((l) => l.circuit === 'closed') && found;
      },
      5_000,
      'the circuit closed line',
    );
    expect(changes.map((l) => l.circuit)).toEqual(['opened', 'half_open', 'closed']);
    expect(changes[0]).toMatchObject({ level: 40, merchant_id: merchant.id, failures: 2 });
    for (const line of changes) expect(line).toMatchObject({ merchant_id: merchant.id, destination });
    expect(
      about(deliveryId)
        .filter((l) => l.status)
        .map((l) => [l.attempt, l.status, l.probe ?? false]),
    ).toEqual([
      [1, 'retry', false],
      [2, 'retry', false],
      [3, 'succeeded', true],
    ]);
  });

  it("a secret that does not open (our fault): the merchant's log row has the fixed text, the worker's line the detail; exhausted at the end", async () => {
    const receiver = await CallbackReceiver.start();
    receivers.push(receiver);
    const { merchant, channels } = await merchantWithChannels(api.operator);
    const { merchant: other } = await merchantWithChannels(api.operator);
    // Another merchant's sealed secret: sealed for another api_key, it never opens as this one's.
    await db.db.query(`UPDATE merchants SET api_secret_enc = (SELECT api_secret_enc FROM merchants WHERE id = $2) WHERE id = $1`, [merchant.id, other.id]);
    const order = await db.insertOrder(merchant.id, channels.remotepay, { notifyUrl: receiver.url });
    const { deliveryId } = await db.insertEvent(order.orderId);
    await api.app.get(CallbackJobs).deliver(deliveryId);
    const row = await waitFor(() => db.ended(deliveryId), 15_000, 'ended');
    expect(row.status).toBe('failed');
    expect((await db.attempts(deliveryId)).map((a) => a.error)).toEqual(Array(4).fill(INTERNAL_FAILURE_TEXT));
    expect(receiver.received).toHaveLength(0);
    const attemptLines = await waitFor(
      () => about(deliveryId).filter((l) => l.status).length === 4 && about(deliveryId).filter((l) => l.status),
      5_000,
      'four attempt lines',
    );
    expect(attemptLines.map((l) => l.status)).toEqual(['retry', 'retry', 'retry', 'exhausted']);
    for (const line of attemptLines)
      expect(line).toMatchObject({ reason: INTERNAL_FAILURE_TEXT, http_status: null, err: 'the master key does not open this value' });
    // Our own failure never counts against the merchant's circuit.
    expect(lines().filter((l) => l.circuit !== undefined && l.merchant_id === merchant.id)).toEqual([]);
  });

  it('never a secret, a signature, a nonce or a body', async () => {
    const output = worker.output();
    const received: ReceivedCallback[] = receivers.flatMap((r) => r.received);
    expect(received.length).toBeGreaterThan(3);
    const forbidden = [api.config.masterKey.toString('base64'), ...merchants.map((m) => m.api_secret)];
    for (const callback of received) {
      forbidden.push(String(callback.body.signature), String(callback.body.nonce), String(callback.headers['webhook-signature']), callback.raw);
    }
    for (const text of forbidden) expect(output).not.toContain(text);
    // Every line is JSON: nothing printed past the logger.
    for (const line of output.split('\n').filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow();
  });
});
