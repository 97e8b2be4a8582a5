import { type ClaimRules, type ClaimedAttempt, CallbackDeliveryRepository, type FinishedAttempt } from '@app/db';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { CallbackFixtures } from './helpers/callbacks';

/**
 * claim_callback_deliveries and recordFinished against PostgreSQL, without HTTP: SPEC 7's order,
 * per-destination limit, leases and circuit as the rows every worker shares.
 */
describe('callback claim rules (SPEC 7 Order, Fairness, Durability)', () => {
  let api: TestApi;
  let db: CallbackFixtures;
  let repo: CallbackDeliveryRepository;
  let channelId: number;
  const RULES: ClaimRules = { limit: 100, leaseMs: 30_000, perDestination: 3, probeMs: 60_000, maxAttempts: 4 };
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

  // Claims see every destination of the database: each test starts with nothing pending.
  afterEach(async () => {
    await db.db.query(`UPDATE callback_deliveries SET status = 'failed', lease_until = NULL WHERE status = 'pending'`);
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

  function outcome(a: ClaimedAttempt, ok: boolean, extra: Partial<FinishedAttempt> = {}): FinishedAttempt {
    return {
      deliveryId: a.deliveryId,
      number: a.number,
      url: a.notifyUrl,
      httpStatus: ok ? 200 : 500,
      durationMs: 5,
      responseExcerpt: ok ? 'success' : 'boom',
      error: ok ? null : 'HTTP 500',
      status: ok ? 'succeeded' : 'pending',
      nextAttemptAt: ok ? null : new Date(Date.now() - 1000),
      countsForCircuit: true,
      ...extra,
    };
  }

  const claim = async (rules: Partial<ClaimRules> = {}) => (await repo.claimDue({ ...RULES, ...rules })).attempts;
  const byDestination = (claimed: ClaimedAttempt[]) => claimed.reduce<Record<string, number>>((m, a) => ({ ...m, [a.destination]: (m[a.destination] ?? 0) + 1 }), {});

  it('a destination is scheme://host:port, lower-case, with the default port filled in', async () => {
    const cases: [string | null, string][] = [
      ['HTTPS://Shop.Example/notify?x=1', 'https://shop.example:443'],
      ['http://shop.example/notify', 'http://shop.example:80'],
      ['http://user:pw@shop.example:8080/n', 'http://shop.example:8080'],
      ['http://[::1]:9000/n', 'http://[::1]:9000'],
      ['https://shop.example.:443', 'https://shop.example:443'],
      ['not a url', ''],
      [null, ''],
    ];
    for (const [url, destination] of cases) {
      const { rows } = await db.db.query<{ d: string }>(`SELECT callback_destination($1) AS d`, [url]);
      expect([url, rows[0].d]).toEqual([url, destination]);
    }
  });

  it('at most perDestination live leases per destination; another destination is not held by a full one', async () => {
    const a = await deliveries(await merchantAt('http://a.example/n'), 5);
    await deliveries(await merchantAt('http://b.example/n'), 2);
    const first = await claim();
    expect(byDestination(first)).toEqual({ 'http://a.example:80': 3, 'http://b.example:80': 2 });
    expect(await claim()).toEqual([]);
    // One of A's attempts is recorded: its slot is free again, for exactly one more.
    await repo.recordFinished([outcome(first.find((c) => c.destination === 'http://a.example:80')!, true)], CIRCUIT);
    const next = await claim();
    expect(byDestination(next)).toEqual({ 'http://a.example:80': 1 });
    expect(a).toContain(next[0].deliveryId);
  });

  it('two workers claiming at the same moment together stay within the limit, and never take the same delivery', async () => {
    await deliveries(await merchantAt('http://c.example/n'), 10);
    const [one, two] = await Promise.all([claim(), claim()]);
    expect(one.length + two.length).toBe(3);
    expect(new Set([...one, ...two].map((c) => c.deliveryId)).size).toBe(3);
  });

  it('an expired lease is claimable again (the worker died): the next attempt, the lost one still logged', async () => {
    const [id] = await deliveries(await merchantAt('http://d.example/n'), 1);
    const [first] = await claim();
    expect(first).toMatchObject({ deliveryId: id, number: 1, probe: false });
    expect(await claim()).toEqual([]);
    await db.db.query(`UPDATE callback_deliveries SET lease_until = now() - interval '1 millisecond' WHERE id = $1`, [id]);
    const [again] = await claim();
    expect(again).toMatchObject({ deliveryId: id, number: 2 });
    expect((await db.attempts(id)).map((a) => [a.number, a.error])).toEqual([
      [1, expect.stringMatching(/no outcome recorded/)],
      [2, expect.stringMatching(/no outcome recorded/)],
    ]);
  });

  it("an order's events go out in order, refund events too; its wait never holds another order", async () => {
    const merchantId = await merchantAt('http://e.example/n');
    const { orderId } = await db.insertOrder(merchantId, channelId);
    const paid = await db.insertEvent(orderId, 'order.paid');
    const completed = await db.insertEvent(orderId, 'order.completed');
    const refunded = await db.insertEvent(orderId, 'refund.succeeded');
    const [other] = await deliveries(merchantId, 1);

    const first = await claim();
    expect(first.map((c) => c.deliveryId).sort()).toEqual([paid.deliveryId, other].sort());
    // order.paid fails and waits for its retry: order.completed still waits behind it.
    const paidAttempt = first.find((c) => c.deliveryId === paid.deliveryId)!;
    await repo.recordFinished([outcome(paidAttempt, false, { nextAttemptAt: new Date(Date.now() + 60_000) })], CIRCUIT);
    expect(await claim()).toEqual([]);
    // Its retry comes and succeeds: then order.completed, and only then the refund's event.
    await db.db.query(`UPDATE callback_deliveries SET next_attempt_at = now() WHERE id = $1`, [paid.deliveryId]);
    const [retry] = await claim();
    expect(retry).toMatchObject({ deliveryId: paid.deliveryId, number: 2 });
    await repo.recordFinished([outcome(retry, true)], CIRCUIT);
    const [second] = await claim();
    expect(second).toMatchObject({ deliveryId: completed.deliveryId, eventType: 'order.completed' });
    expect(await claim()).toEqual([]);
    // A delivery that ended failed does not hold the later ones either.
    await repo.recordFinished([outcome(second, false, { status: 'failed', nextAttemptAt: null, httpStatus: 410, error: 'HTTP 410' })], CIRCUIT);
    const [third] = await claim();
    expect(third).toMatchObject({ deliveryId: refunded.deliveryId, eventType: 'refund.succeeded' });
  });

  it('the circuit opens after consecutive failures, holds due deliveries without spending attempts, probes one at a time, and the first success closes it', async () => {
    const destination = 'http://f.example:80';
    const ids = await deliveries(await merchantAt('http://f.example/n'), 6);
    const first = await claim();
    expect(first).toHaveLength(3);
    // A success in the batch resets the count: only the failures after it add up.
    await repo.recordFinished([outcome(first[0], false), outcome(first[1], true), outcome(first[2], false)], CIRCUIT);
    expect(await repo.circuit(destination)).toMatchObject({ consecutiveFailures: 1, circuitOpenSince: null });
    const second = await claim();
    expect(second).toHaveLength(3);
    await repo.recordFinished(second.map((c) => outcome(c, false)), CIRCUIT);
    const opened = await repo.circuit(destination);
    expect(opened).toMatchObject({ consecutiveFailures: 4, circuitOpenSince: expect.any(Date) });
    expect(opened!.nextProbeAt!.getTime()).toBeGreaterThan(Date.now() + 50_000);

    const attemptsMade = async () =>
      (await db.db.query<{ n: number }>(`SELECT sum(attempts_made)::int AS n FROM callback_deliveries WHERE id = ANY($1::uuid[])`, [ids])).rows[0].n;
    const spent = await attemptsMade();
    // Open: due deliveries are held, nothing is claimed and no attempt is spent.
    expect(await claim()).toEqual([]);
    expect(await repo.circuitFigures()).toMatchObject({ openCircuits: expect.any(Number), heldDeliveries: expect.any(Number) });
    expect((await repo.circuitFigures()).heldDeliveries).toBeGreaterThanOrEqual(5);
    expect(await attemptsMade()).toBe(spent);

    // The probe time comes: exactly one delivery goes, and the next probe moves on.
    await db.db.query(`UPDATE callback_destinations SET next_probe_at = now() WHERE destination = $1`, [destination]);
    const [probe, ...none] = await claim();
    expect(none).toEqual([]);
    expect(probe).toMatchObject({ probe: true, destination });
    expect(await claim()).toEqual([]);
    expect((await repo.circuit(destination))!.nextProbeAt!.getTime()).toBeGreaterThan(Date.now() + 50_000);
    // A failed probe keeps it open.
    await repo.recordFinished([outcome(probe, false)], CIRCUIT);
    expect(await repo.circuit(destination)).toMatchObject({ consecutiveFailures: 5, circuitOpenSince: expect.any(Date) });
    expect(await claim()).toEqual([]);

    // The next probe succeeds: closed, and the held deliveries go again, within the limit.
    await db.db.query(`UPDATE callback_destinations SET next_probe_at = now() WHERE destination = $1`, [destination]);
    const [probe2] = await claim();
    expect(probe2.probe).toBe(true);
    expect(await attemptsMade()).toBe(spent + 2);
    await repo.recordFinished([outcome(probe2, true)], CIRCUIT);
    expect(await repo.circuit(destination)).toMatchObject({ consecutiveFailures: 0, circuitOpenSince: null, nextProbeAt: null });
    const released = await claim();
    expect(released).toHaveLength(3);
    expect(released.every((c) => !c.probe)).toBe(true);
  });

  it('failures on our side (no address, nonce store down) do not count against a destination', async () => {
    const destination = 'http://g.example:80';
    await deliveries(await merchantAt('http://g.example/n'), 3);
    const claimed = await claim();
    await repo.recordFinished(claimed.map((c) => outcome(c, false, { countsForCircuit: false })), { failures: 1, probeMs: 60_000 });
    expect(await repo.circuit(destination)).toBeNull();
  });

  it('a delivery whose every attempt was used (the worker died on the last) ends failed, unsent', async () => {
    const [used, fresh] = await deliveries(await merchantAt('http://h.example/n'), 2);
    await db.db.query(`UPDATE callback_deliveries SET attempts_made = $2, lease_until = now() - interval '1 second' WHERE id = $1`, [used, RULES.maxAttempts]);
    const batch = await repo.claimDue(RULES);
    expect(batch.exhausted).toEqual([used]);
    expect(batch.attempts.map((a) => a.deliveryId)).toEqual([fresh]);
    expect(await db.delivery(used)).toMatchObject({ status: 'failed', last_error: 'no attempts left' });
    expect(await db.attempts(used)).toEqual([]);
  });

  it('a row settled while a claim was scanning is not claimed back to pending', async () => {
    const [id] = await deliveries(await merchantAt('http://j.example/n'), 1);
    // Another transaction holds the row and settles it; the claim has already taken its snapshot when it commits.
    const other = await CallbackFixtures.connect(api.databaseUrl);
    try {
      await other.db.query('BEGIN');
      await other.db.query(`UPDATE callback_deliveries SET status = 'succeeded' WHERE id = $1`, [id]);
      const claiming = claim();
      await new Promise((r) => setTimeout(r, 200));
      await other.db.query('COMMIT');
      expect(await claiming).toEqual([]);
    } finally {
      await other.close();
    }
    expect(await db.delivery(id)).toMatchObject({ status: 'succeeded', attempts_made: 0 });
  });

  it('a failure recorded after a later attempt was claimed (its lease had expired) does not move the delivery back', async () => {
    const [id] = await deliveries(await merchantAt('http://i.example/n'), 1);
    const [stale] = await claim();
    await db.db.query(`UPDATE callback_deliveries SET lease_until = now() - interval '1 millisecond' WHERE id = $1`, [id]);
    const [current] = await claim();
    await repo.recordFinished([outcome(current, true)], CIRCUIT);
    await repo.recordFinished([outcome(stale, false, { nextAttemptAt: new Date(Date.now() + 60_000) })], CIRCUIT);
    expect(await db.delivery(id)).toMatchObject({ status: 'succeeded', attempts_made: 2 });
    expect((await db.attempts(id)).map((a) => [a.number, a.http_status])).toEqual([
      [1, 500],
      [2, 200],
    ]);
  });
});
