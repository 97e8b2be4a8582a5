import { Redis } from 'ioredis';
import { type AttemptClaim, type ClaimRules, type ClaimedAttempt, CallbackDeliveryRepository, type FinishedAttempt } from '@app/db';
import { DestinationSlots } from '../apps/worker/src/callbacks/destination-slots';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { CallbackFixtures, flushQueueKeys } from './helpers/callbacks';
import { TEST_REDIS_URL } from './helpers/config';

/**
 * What one callback job relies on, against PostgreSQL and Redis without HTTP: the claim of one
 * delivery's attempt (SPEC 7 Order, leases, the circuit per merchant and destination), the
 * record of its outcome, and the slots per (merchant, destination) shared by every worker.
 */
describe('callback job rules (SPEC 7 Order, Fairness, Durability)', () => {
  let api: TestApi;
  let db: CallbackFixtures;
  let repo: CallbackDeliveryRepository;
  let channelId: number;
  const RULES: ClaimRules = { leaseMs: 30_000, probeMs: 60_000, maxAttempts: 4 };
  const CIRCUIT = { failures: 3, probeMs: 60_000 };

  beforeAll(async () => {
    api = await startTestApi({});
    db = await CallbackFixtures.connect(api.databaseUrl);
    repo = api.app.get(CallbackDeliveryRepository);
  });

  afterAll(async () => {
    await db?.close();
    await api?.close();
  });

  async function merchantAt(url: string): Promise<number> {
    const { merchant, channels } = await merchantWithChannels(api.operator, { notifyUrl: url });
    channelId = channels.remotepay;
    return merchant.id;
  }

  /** `n` orders of the merchant, each with one due order.paid delivery. */
  async function deliveries(merchantId: number, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await db.insertEvent((await db.insertOrder(merchantId, channelId)).orderId)).deliveryId);
    return ids;
  }

  const claim = (id: string, destination: string, rules: Partial<ClaimRules> = {}): Promise<AttemptClaim> =>
    repo.claim(id, destination, { ...RULES, ...rules });
  async function claimed(id: string, destination: string): Promise<ClaimedAttempt> {
    const c = await claim(id, destination);
    if (c.kind !== 'claimed') throw new Error(`expected an attempt of ${id}, got ${c.kind}`);
    return c.attempt;
  }

  function outcome(a: ClaimedAttempt, destination: string, ok: boolean, extra: Partial<FinishedAttempt> = {}): FinishedAttempt {
    return {
      deliveryId: a.deliveryId,
      number: a.number,
      url: a.notifyUrl,
      httpStatus: ok ? 200 : 500,
      durationMs: 5,
      responseExcerpt: ok ? 'success' : 'boom',
      error: ok ? null : 'HTTP 500',
      status: ok ? 'succeeded' : 'pending',
      nextAttemptAt: ok ? null : new Date(Date.now() + 60_000),
      circuit: ok ? 'success' : 'failure',
      destination,
      ...extra,
    };
  }

  it('a delivery keeps the address resolved when it was written; a later change of the merchant URL does not move it', async () => {
    const merchantId = await merchantAt('https://shop.example/notify');
    const [id] = await deliveries(merchantId, 1);
    await db.db.query(`UPDATE merchants SET notify_url = 'https://elsewhere.example/n' WHERE id = $1`, [merchantId]);
    expect((await claimed(id, 'https://shop.example:443')).notifyUrl).toBe('https://shop.example/notify');
  });

  it('two workers claiming one delivery at the same moment: one attempt, the other sees it leased', async () => {
    const [id] = await deliveries(await merchantAt('http://c.example/n'), 1);
    const both = await Promise.all([claim(id, 'http://c.example:80'), claim(id, 'http://c.example:80')]);
    expect(both.map((c) => c.kind).sort()).toEqual(['claimed', 'leased']);
    expect(await db.attempts(id)).toHaveLength(1);
  });

  it('claims and records asked at once (one statement each): every one its own answer; one that fails fails alone', async () => {
    const dest = 'http://g.example:80';
    const merchantId = await merchantAt('http://g.example/n');
    const ids = await deliveries(merchantId, 4);
    const { orderId } = await db.insertOrder(merchantId, channelId);
    const paid = await db.insertEvent(orderId, 'order.paid');
    const completed = await db.insertEvent(orderId, 'order.completed');
    ids.push(paid.deliveryId);
    const attempts = await Promise.all(ids.map((id) => claimed(id, dest)));
    expect(attempts.map((a) => [a.deliveryId, a.number])).toEqual(ids.map((id) => [id, 1]));
    // A duration that is not an integer: PostgreSQL refuses that record, so its batch; the others are recorded one by one.
    const recorded = await Promise.allSettled(attempts.map((a, i) => repo.record(outcome(a, dest, true, i === 1 ? { durationMs: 1.5 } : {}), CIRCUIT)));
    expect(recorded.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect((recorded[1] as PromiseRejectedResult).reason).toMatchObject({ message: expect.stringMatching(/invalid input syntax for type integer/) });
    expect((recorded[0] as PromiseFulfilledResult<unknown>).value).toEqual({ ended: true, circuitClosed: false, circuitOpened: false, next: null });
    expect((recorded[4] as PromiseFulfilledResult<unknown>).value).toEqual({
      ended: true,
      circuitClosed: false,
      circuitOpened: false,
      next: { id: completed.deliveryId, merchantId, notifyUrl: 'http://g.example/n' },
    });
    // One pg client: its reads one after another (pg deprecates a query sent while one is running).
    const statuses: string[] = [];
    for (const id of ids) statuses.push((await db.delivery(id)).status);
    expect(statuses).toEqual(['succeeded', 'pending', 'succeeded', 'succeeded', 'succeeded']);
    expect((await db.attempts(ids[1])).map((a) => a.error)).toEqual([expect.stringMatching(/no outcome recorded/)]);
  });

  it('an expired lease is claimable again (the worker died): the next attempt, the lost one still logged', async () => {
    const [id] = await deliveries(await merchantAt('http://d.example/n'), 1);
    expect(await claimed(id, 'http://d.example:80')).toMatchObject({ deliveryId: id, number: 1, probe: false });
    expect(await claim(id, 'http://d.example:80')).toMatchObject({ kind: 'leased', until: expect.any(Date) });
    await db.db.query(`UPDATE callback_deliveries SET lease_until = now() - interval '1 millisecond' WHERE id = $1`, [id]);
    expect(await claimed(id, 'http://d.example:80')).toMatchObject({ deliveryId: id, number: 2 });
    expect((await db.attempts(id)).map((a) => [a.number, a.error])).toEqual([
      [1, expect.stringMatching(/no outcome recorded/)],
      [2, expect.stringMatching(/no outcome recorded/)],
    ]);
  });

  it("an order's events go out in order, refund events too; only the first has a job, and its end names the next", async () => {
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
    expect(await claim(completed.deliveryId, dest)).toEqual({ kind: 'waiting' });
    // A parked job's second look reads what the claim read.
    expect([await repo.hasEarlierPending(completed.deliveryId), await repo.hasEarlierPending(paid.deliveryId), await repo.hasEarlierPending(other)]).toEqual([
      true,
      false,
      false,
    ]);
    // order.paid fails and waits for its retry: order.completed still waits behind it, the other order does not.
    const first = await claimed(paid.deliveryId, dest);
    expect(await repo.record(outcome(first, dest, false), CIRCUIT)).toEqual({ ended: false, circuitClosed: false, circuitOpened: false, next: null });
    expect(await claim(completed.deliveryId, dest)).toEqual({ kind: 'waiting' });
    expect((await claimed(other, dest)).deliveryId).toBe(other);
    // Its retry succeeds: it names order.completed as the next, and only then the refund's event.
    await db.db.query(`UPDATE callback_deliveries SET lease_until = NULL WHERE id = $1`, [paid.deliveryId]);
    const retry = await claimed(paid.deliveryId, dest);
    expect(retry.number).toBe(2);
    expect(await repo.record(outcome(retry, dest, true), CIRCUIT)).toMatchObject({ ended: true, next: { id: completed.deliveryId, merchantId } });
    expect(await repo.hasEarlierPending(completed.deliveryId)).toBe(false);
    const second = await claimed(completed.deliveryId, dest);
    expect(second.eventType).toBe('order.completed');
    expect(await claim(refunded.deliveryId, dest)).toEqual({ kind: 'waiting' });
    // A delivery that ended failed does not hold the later ones either.
    const ended = await repo.record(outcome(second, dest, false, { status: 'failed', nextAttemptAt: null, httpStatus: 410, error: 'HTTP 410' }), CIRCUIT);
    expect(ended).toMatchObject({ ended: true, next: { id: refunded.deliveryId } });
    expect((await claimed(refunded.deliveryId, dest)).eventType).toBe('refund.succeeded');
  });

  it('the circuit opens after consecutive failures, holds deliveries without spending attempts, probes one at a time, and the first success closes it', async () => {
    const dest = 'http://f.example:80';
    const merchantId = await merchantAt('http://f.example/n');
    const ids = await deliveries(merchantId, 6);
    // A success resets the count: only the failures after it add up.
    for (const [i, ok] of [false, true, false, false].entries()) await repo.record(outcome(await claimed(ids[i], dest), dest, ok), CIRCUIT);
    expect(await db.circuit(merchantId, dest)).toMatchObject({ consecutiveFailures: 2, openSince: null });
    await repo.record(outcome(await claimed(ids[4], dest), dest, false), CIRCUIT);
    const opened = await db.circuit(merchantId, dest);
    expect(opened).toMatchObject({ consecutiveFailures: 3, openSince: expect.any(Date) });
    expect(opened!.nextProbeAt!.getTime()).toBeGreaterThan(Date.now() + 50_000);

    // Open: the next delivery is held until the probe time, no attempt spent.
    const held = await claim(ids[5], dest);
    expect(held).toEqual({ kind: 'held', until: opened!.nextProbeAt });
    expect(await repo.circuitIsOpen(merchantId, dest)).toBe(true);
    expect(await db.delivery(ids[5])).toMatchObject({ attempts_made: 0 });
    expect(await repo.heldBy(merchantId, dest, 10)).toContain(ids[5]);
    expect((await repo.circuitFigures()).heldDeliveries).toBeGreaterThanOrEqual(1);

    // The probe time comes: exactly one delivery goes, and the next probe moves on.
    await db.db.query(`UPDATE callback_circuits SET next_probe_at = now() WHERE merchant_id = $1 AND destination = $2`, [merchantId, dest]);
    await db.db.query(`UPDATE callback_deliveries SET lease_until = NULL WHERE id = ANY($1::uuid[])`, [ids]);
    const probe = await claimed(ids[5], dest);
    expect(probe.probe).toBe(true);
    expect(await claim(ids[0], dest)).toMatchObject({ kind: 'held' });
    // A failed probe keeps it open; a successful one closes it and says so (its held jobs are released).
    expect(await repo.record(outcome(probe, dest, false), CIRCUIT)).toMatchObject({ circuitClosed: false });
    expect(await db.circuit(merchantId, dest)).toMatchObject({ consecutiveFailures: 4, openSince: expect.any(Date) });
    await db.db.query(`UPDATE callback_circuits SET next_probe_at = now() WHERE merchant_id = $1 AND destination = $2`, [merchantId, dest]);
    await db.db.query(`UPDATE callback_deliveries SET lease_until = NULL WHERE id = $1`, [ids[5]]);
    const probe2 = await claimed(ids[5], dest);
    expect(await repo.record(outcome(probe2, dest, true), CIRCUIT)).toMatchObject({ circuitClosed: true });
    expect(await db.circuit(merchantId, dest)).toMatchObject({ consecutiveFailures: 0, openSince: null, nextProbeAt: null });
    expect(await repo.circuitIsOpen(merchantId, dest)).toBe(false);
    expect((await claimed(ids[0], dest)).probe).toBe(false);
  });

  it('several failures of one key recorded at once (one batched statement, or one by one): exactly one answers that it opened the circuit', async () => {
    const merchantId = await merchantAt('http://o.example/n');
    for (const [dest, failures] of [
      ['http://o.example:80', 3],
      ['http://o.example:81', 1],
    ] as const) {
      const attempts = await Promise.all((await deliveries(merchantId, 6)).map((id) => claimed(id, dest)));
      const batched = await Promise.all(attempts.map((a) => repo.record(outcome(a, dest, false), { failures, probeMs: 60_000 })));
      expect(batched.filter((r) => r.circuitOpened)).toHaveLength(1);
      expect(await db.circuit(merchantId, dest)).toMatchObject({ consecutiveFailures: 6, openSince: expect.any(Date) });
    }
    // One by one, each on its own connection (the fallback's path): still one, on another key.
    const dest = 'http://o.example:82';
    const attempts = await Promise.all((await deliveries(merchantId, 6)).map((id) => claimed(id, dest)));
    const pool = await Promise.all(attempts.map(() => CallbackFixtures.connect(api.databaseUrl)));
    try {
      const opened = await Promise.all(
        attempts.map(async (a, i) => {
          const f = outcome(a, dest, false);
          const { rows } = await pool[i].db.query<{ circuit_opened: boolean }>(
            `SELECT circuit_opened FROM record_callback_attempt($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
            [
              f.deliveryId,
              f.number,
              f.url,
              f.httpStatus,
              f.durationMs,
              f.responseExcerpt,
              f.error,
              f.status,
              f.nextAttemptAt,
              f.circuit,
              f.destination,
              2,
              60_000,
            ],
          );
          return rows[0].circuit_opened;
        }),
      );
      expect(opened.filter(Boolean)).toHaveLength(1);
    } finally {
      await Promise.all(pool.map((p) => p.close()));
    }
    expect(await db.circuit(merchantId, dest)).toMatchObject({ consecutiveFailures: 6, openSince: expect.any(Date) });
  });

  it("one merchant's failures never open another merchant's circuit to the same destination", async () => {
    const dest = 'http://shared.example:80';
    const a = await merchantAt('http://shared.example/a');
    const b = await merchantAt('http://shared.example/b');
    for (const id of await deliveries(a, 3)) await repo.record(outcome(await claimed(id, dest), dest, false), CIRCUIT);
    expect(await db.circuit(a, dest)).toMatchObject({ openSince: expect.any(Date) });
    const [mine] = await deliveries(b, 1);
    expect(await claim(mine, dest)).toMatchObject({ kind: 'claimed' });
    expect(await db.circuit(b, dest)).toBeNull();
  });

  it('failures on our side (no address, nonce store down) do not count against a circuit', async () => {
    const dest = 'http://g.example:80';
    const merchantId = await merchantAt('http://g.example/n');
    for (const id of await deliveries(merchantId, 3))
      await repo.record(outcome(await claimed(id, dest), dest, false, { circuit: 'none' }), { failures: 1, probeMs: 60_000 });
    expect(await db.circuit(merchantId, dest)).toBeNull();
  });

  it('a delivery whose every attempt was used (the worker died on the last) ends failed, unsent', async () => {
    const [used] = await deliveries(await merchantAt('http://h.example/n'), 1);
    await db.db.query(`UPDATE callback_deliveries SET attempts_made = $2 WHERE id = $1`, [used, RULES.maxAttempts]);
    expect(await claim(used, 'http://h.example:80')).toEqual({ kind: 'exhausted' });
    expect(await db.delivery(used)).toMatchObject({ status: 'failed', last_error: 'no attempts left' });
    expect(await db.attempts(used)).toEqual([]);
  });

  it('a settled delivery is not claimed back to pending, even when its claim waited for the settling transaction', async () => {
    const [id] = await deliveries(await merchantAt('http://j.example/n'), 1);
    const other = await CallbackFixtures.connect(api.databaseUrl);
    try {
      await other.db.query('BEGIN');
      await other.db.query(`UPDATE callback_deliveries SET status = 'succeeded' WHERE id = $1`, [id]);
      const claiming = claim(id, 'http://j.example:80');
      await other.db.query(`SELECT pg_sleep(0.2)`);
      await other.db.query('COMMIT');
      expect(await claiming).toEqual({ kind: 'settled' });
    } finally {
      await other.close();
    }
    expect(await db.delivery(id)).toMatchObject({ status: 'succeeded', attempts_made: 0 });
  });

  it('a failure recorded after a later attempt was claimed (its lease had expired) does not move the delivery back', async () => {
    const dest = 'http://i.example:80';
    const [id] = await deliveries(await merchantAt('http://i.example/n'), 1);
    const stale = await claimed(id, dest);
    await db.db.query(`UPDATE callback_deliveries SET lease_until = now() - interval '1 millisecond' WHERE id = $1`, [id]);
    const current = await claimed(id, dest);
    await repo.record(outcome(current, dest, true), CIRCUIT);
    await repo.record(outcome(stale, dest, false), CIRCUIT);
    expect(await db.delivery(id)).toMatchObject({ status: 'succeeded', attempts_made: 2 });
    expect((await db.attempts(id)).map((a) => [a.number, a.http_status])).toEqual([
      [1, 500],
      [2, 200],
    ]);
  });

  it('the sweep takes overdue deliveries first in their order, and pushes them on so the next sweep moves on', async () => {
    const merchantId = await merchantAt('http://k.example/n');
    const { orderId } = await db.insertOrder(merchantId, channelId);
    const paid = await db.insertEvent(orderId, 'order.paid');
    const completed = await db.insertEvent(orderId, 'order.completed');
    await db.db.query(`UPDATE callback_deliveries SET next_attempt_at = now() - interval '1 hour' WHERE id = ANY($1::uuid[])`, [
      [paid.deliveryId, completed.deliveryId],
    ]);
    const taken = (await repo.takeOverdue(60_000, 10_000)).map((d) => d.id);
    expect(taken).toContain(paid.deliveryId);
    expect(taken).not.toContain(completed.deliveryId);
    expect((await repo.takeOverdue(60_000, 10_000)).map((d) => d.id)).not.toContain(paid.deliveryId);
  });

  describe('slots per (merchant, destination), shared by every worker through Redis', () => {
    const prefix = `slots-${process.pid}-${Date.now()}`;
    let redis: Redis[];
    let workers: DestinationSlots[];
    const a = { merchantId: 1, destination: 'http://a.example:80' };

    beforeAll(() => {
      redis = [new Redis(TEST_REDIS_URL), new Redis(TEST_REDIS_URL)];
      workers = redis.map((r) => new DestinationSlots(3, r, prefix));
    });

    afterAll(async () => {
      await flushQueueKeys(prefix);
      await Promise.all(redis.map((r) => r.quit()));
    });

    it('two workers taking at the same moment together stay within the limit; another key and another merchant are not held', async () => {
      const taken = await Promise.all(['1', '2', '3', '4', '5'].map((h, i) => workers[i % 2].take(a, h, 30_000)));
      expect(taken.filter(Boolean)).toHaveLength(3);
      expect(await workers[0].take({ merchantId: 1, destination: 'http://b.example:80' }, 'b1', 30_000)).toBe(true);
      expect(await workers[1].take({ merchantId: 2, destination: a.destination }, 'm2', 30_000)).toBe(true);
      // A freed slot hands back the first parked holder, to wake it; the slot is then its.
      const holder = ['1', '2', '3', '4', '5'].find((_, i) => taken[i])!;
      const parked = ['1', '2', '3', '4', '5'].filter((_, i) => !taken[i]);
      expect(await workers[1].give(a, holder)).toBe(parked[0]);
      expect(await workers[0].take(a, parked[0], 30_000)).toBe(true);
      expect(await workers[0].take(a, parked[1], 30_000)).toBe(false);
    });

    it("a dead worker's slot comes back when its lease ends", async () => {
      const key = { merchantId: 3, destination: 'http://c.example:80' };
      for (const h of ['x', 'y', 'z']) expect(await workers[0].take(key, h, 150)).toBe(true);
      expect(await workers[1].take(key, 'late', 30_000)).toBe(false);
      // Polls the slot itself (the sign that the lease ended), for at most 5 s.
      let got = false;
      for (const deadline = Date.now() + 5_000; !got && Date.now() < deadline;) {
        got = await workers[1].take(key, 'late', 30_000);
        if (!got) await new Promise((r) => setTimeout(r, 25));
      }
      expect(got).toBe(true);
    });

    it('in the embedded mode (no Redis) the same rules hold in the process', async () => {
      const local = new DestinationSlots(2, null, prefix);
      expect(await local.take(a, 'p', 30_000)).toBe(true);
      expect(await local.take(a, 'q', 30_000)).toBe(true);
      expect(await local.take(a, 'r', 30_000)).toBe(false);
      expect(await local.give(a, 'p')).toBe('r');
      expect(await local.take(a, 'r', 30_000)).toBe(true);
    });
  });
});
