import { CallbackAttemptRepository, CallbackFiguresRepository, CallbackSweepRepository, type FinishedAttempt, type LoadedDelivery } from '@app/db';
import { parseNotifyUrl } from '@app/common';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { CallbackFixtures } from './helpers/callbacks';

/**
 * What one callback job relies on in PostgreSQL, without HTTP or a queue: the plain read before
 * an attempt, the record of it written once (guarded, batched), SPEC 7 Order's one predicate,
 * the circuit's mirror, `no_address`, and the sweep's overdue rows. The key's slots and circuit
 * themselves are DestinationGate's (test/callback-gate.e2e-spec.ts).
 */
describe('callback records (SPEC 7 Order, Address, Durability)', () => {
  let api: TestApi;
  let db: CallbackFixtures;
  let repo: CallbackAttemptRepository;
  let channelId: number;

  beforeAll(async () => {
    api = await startTestApi({});
    db = await CallbackFixtures.connect(api.databaseUrl);
    repo = api.app.get(CallbackAttemptRepository);
  });

  afterAll(async () => {
    await db?.close();
    await api?.close();
  });

  async function merchantAt(url: string | null): Promise<number> {
    const { merchant, channels } = await merchantWithChannels(api.operator, url === null ? {} : { notifyUrl: url });
    channelId = channels.remotepay;
    return merchant.id;
  }

  /** `n` orders of the merchant, each with one due order.paid delivery. */
  async function deliveries(merchantId: number, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await db.insertEvent((await db.insertOrder(merchantId, channelId)).orderId)).deliveryId);
    return ids;
  }

  async function loaded(id: string): Promise<LoadedDelivery> {
    const d = await repo.load(id);
    if (!d) throw new Error(`no delivery ${id}`);
    return d;
  }

  function outcome(d: LoadedDelivery, destination: string, ok: boolean, extra: Partial<FinishedAttempt> = {}): FinishedAttempt {
    return {
      deliveryId: d.deliveryId,
      number: d.attemptsMade + 1,
      url: d.notifyUrl,
      httpStatus: ok ? 200 : 500,
      durationMs: 5,
      responseExcerpt: ok ? 'success' : 'boom',
      error: ok ? null : 'HTTP 500',
      status: ok ? 'succeeded' : 'pending',
      nextAttemptAt: ok ? null : new Date(Date.now() + 60_000),
      destination,
      circuit: null,
      ...extra,
    };
  }

  it('a delivery keeps the address resolved when it was written; a later change of the merchant URL does not move it', async () => {
    const merchantId = await merchantAt('https://shop.example/notify');
    const [id] = await deliveries(merchantId, 1);
    await db.db.query(`UPDATE merchants SET notify_url = 'https://elsewhere.example/n' WHERE id = $1`, [merchantId]);
    expect(await loaded(id)).toMatchObject({ status: 'pending', attemptsMade: 0, notifyUrl: 'https://shop.example/notify', eventType: 'order.paid' });
  });

  it("a delivery is written with its key's destination, the same as the one URL parser's", async () => {
    const merchantId = await merchantAt('https://shop.example/n');
    const urls = [
      'https://Shop.Example/a?b=1',
      'http://shop.example:80/x',
      'https://shop.example:8443',
      'http://127.0.0.1:39111/notify',
      'http://[2001:db8::1]:8080/n',
      'https://[2001:db8::1]/n',
      'https://xn--fiqs8s.example/n#f',
      'http://a.example?x=1',
    ];
    for (const raw of urls) {
      const parsed = parseNotifyUrl(raw)!;
      const { orderId } = await db.insertOrder(merchantId, channelId, { notifyUrl: parsed.url });
      const { deliveryId } = await db.insertEvent(orderId);
      expect([raw, (await db.delivery(deliveryId)).destination]).toEqual([raw, parsed.destination]);
    }
  });

  it('an event whose order and merchant have no address is recorded as no_address: no job, no attempt (SPEC 7 Address)', async () => {
    const merchantId = await merchantAt(null);
    const [id] = await deliveries(merchantId, 1);
    expect(await db.delivery(id)).toMatchObject({ status: 'no_address', attempts_made: 0 });
    expect(await repo.heads([id])).toEqual([]);
    expect(await db.attempts(id)).toEqual([]);
  });

  it('loads and records asked at once (one statement each): every one its own answer; one that fails fails alone', async () => {
    const dest = 'http://g.example:80';
    const merchantId = await merchantAt('http://g.example/n');
    const ids = await deliveries(merchantId, 4);
    const { orderId } = await db.insertOrder(merchantId, channelId);
    const paid = await db.insertEvent(orderId, 'order.paid');
    const completed = await db.insertEvent(orderId, 'order.completed');
    ids.push(paid.deliveryId);
    const read = await Promise.all(ids.map((id) => loaded(id)));
    expect(read.map((a) => [a.deliveryId, a.attemptsMade])).toEqual(ids.map((id) => [id, 0]));
    // A duration that is not an integer: PostgreSQL refuses that record, so its batch; the others are recorded one by one.
    const recorded = await Promise.allSettled(read.map((a, i) => repo.record(outcome(a, dest, true, i === 1 ? { durationMs: 1.5 } : {}))));
    expect(recorded.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect((recorded[1] as PromiseRejectedResult).reason).toMatchObject({ message: expect.stringMatching(/invalid input syntax for type integer/) });
    expect((recorded[0] as PromiseFulfilledResult<unknown>).value).toEqual({ recorded: true, ended: true, next: null });
    expect((recorded[4] as PromiseFulfilledResult<unknown>).value).toEqual({
      recorded: true,
      ended: true,
      next: { id: completed.deliveryId, merchantId, notifyUrl: 'http://g.example/n' },
    });
    const statuses: string[] = [];
    for (const id of ids) statuses.push((await db.delivery(id)).status);
    expect(statuses).toEqual(['succeeded', 'pending', 'succeeded', 'succeeded', 'succeeded']);
    // Nothing is written before an attempt: the refused one left no trace.
    expect(await db.attempts(ids[1])).toEqual([]);
    expect((await db.attempts(ids[0])).map((a) => [a.number, a.http_status])).toEqual([[1, 200]]);
  });

  it('one attempt recorded twice (a job run again after its worker stalled) is recorded once; a stale failure after a later success moves nothing', async () => {
    const dest = 'http://i.example:80';
    const [id] = await deliveries(await merchantAt('http://i.example/n'), 1);
    const first = await loaded(id);
    expect(await repo.record(outcome(first, dest, false))).toMatchObject({ recorded: true, ended: false });
    expect(await repo.record(outcome(first, dest, false))).toMatchObject({ recorded: false, ended: false });
    const second = await loaded(id);
    expect(second.attemptsMade).toBe(1);
    await repo.record(outcome(second, dest, true));
    await repo.record(outcome(first, dest, false));
    expect(await db.delivery(id)).toMatchObject({ status: 'succeeded', attempts_made: 2 });
    expect((await db.attempts(id)).map((a) => [a.number, a.http_status])).toEqual([
      [1, 500],
      [2, 200],
    ]);
  });

  it("an order's events go out in order, refund events too: only the first gets a job, and its end names the next", async () => {
    const dest = 'http://e.example:80';
    const merchantId = await merchantAt('http://e.example/n');
    const { orderId } = await db.insertOrder(merchantId, channelId);
    const paid = await db.insertEvent(orderId, 'order.paid');
    const completed = await db.insertEvent(orderId, 'order.completed');
    const refunded = await db.insertEvent(orderId, 'refund.succeeded');
    const [other] = await deliveries(merchantId, 1);

    expect((await repo.heads([paid.deliveryId, completed.deliveryId, refunded.deliveryId, other])).map((h) => h.id).sort()).toEqual(
      [paid.deliveryId, other].sort(),
    );
    // order.paid fails and waits for its retry: it names nothing, order.completed still waits.
    expect(await repo.record(outcome(await loaded(paid.deliveryId), dest, false))).toEqual({ recorded: true, ended: false, next: null });
    expect(await repo.heads([completed.deliveryId])).toEqual([]);
    // Its retry succeeds: it names order.completed, and only then the refund's event.
    expect(await repo.record(outcome(await loaded(paid.deliveryId), dest, true))).toMatchObject({
      ended: true,
      next: { id: completed.deliveryId, merchantId },
    });
    expect((await repo.heads([completed.deliveryId, refunded.deliveryId])).map((h) => h.id)).toEqual([completed.deliveryId]);
    // A delivery that ended failed does not hold the later ones either.
    const ended = await repo.record(
      outcome(await loaded(completed.deliveryId), dest, false, { status: 'failed', nextAttemptAt: null, httpStatus: 410, error: 'HTTP 410' }),
    );
    expect(ended).toMatchObject({ ended: true, next: { id: refunded.deliveryId } });
  });

  it("the circuit's transitions are mirrored for the pages and tools: opened with its probe time, a failed probe moves it, closed clears it", async () => {
    const dest = 'http://f.example:80';
    const merchantId = await merchantAt('http://f.example/n');
    const ids = await deliveries(merchantId, 3);
    const probeAt = new Date(Date.now() + 60_000);
    await repo.record(outcome(await loaded(ids[0]), dest, false, { circuit: { transition: 'opened', failures: 20, nextProbeAt: probeAt } }));
    const opened = await db.circuit(merchantId, dest);
    expect(opened).toMatchObject({ consecutiveFailures: 20, openSince: expect.any(Date) });
    expect(opened!.nextProbeAt!.getTime()).toBe(probeAt.getTime());
    expect((await api.app.get(CallbackFiguresRepository).circuitFigures()).openCircuits).toBeGreaterThanOrEqual(1);
    const later = new Date(Date.now() + 120_000);
    await repo.record(outcome(await loaded(ids[1]), dest, false, { circuit: { transition: 'probe_failed', failures: 21, nextProbeAt: later } }));
    expect(await db.circuit(merchantId, dest)).toMatchObject({ consecutiveFailures: 21, openSince: opened!.openSince, nextProbeAt: later });
    await repo.record(outcome(await loaded(ids[2]), dest, true, { circuit: { transition: 'closed', failures: 0, nextProbeAt: null } }));
    expect(await db.circuit(merchantId, dest)).toMatchObject({ consecutiveFailures: 0, openSince: null, nextProbeAt: null });
    // No transition, no write: a healthy key has no row.
    const healthy = 'http://healthy.example:80';
    const [h] = await deliveries(await merchantAt('http://healthy.example/n'), 1);
    await repo.record(outcome(await loaded(h), healthy, false));
    expect(await db.circuit(merchantId, healthy)).toBeNull();
  });

  it('the sweep takes overdue deliveries first in their order, and pushes them on so the next sweep moves on', async () => {
    const sweep = api.app.get(CallbackSweepRepository);
    const merchantId = await merchantAt('http://k.example/n');
    const { orderId } = await db.insertOrder(merchantId, channelId);
    const paid = await db.insertEvent(orderId, 'order.paid');
    const completed = await db.insertEvent(orderId, 'order.completed');
    await db.db.query(`UPDATE callback_deliveries SET next_attempt_at = now() - interval '1 hour' WHERE id = ANY($1::uuid[])`, [
      [paid.deliveryId, completed.deliveryId],
    ]);
    const taken = (await sweep.takeOverdue(60_000, 10_000)).map((d) => d.id);
    expect(taken).toContain(paid.deliveryId);
    expect(taken).not.toContain(completed.deliveryId);
    expect((await sweep.takeOverdue(60_000, 10_000)).map((d) => d.id)).not.toContain(paid.deliveryId);
  });
});
