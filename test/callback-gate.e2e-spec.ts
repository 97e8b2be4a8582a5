import { Redis } from 'ioredis';
import { DestinationGate, type GateRules } from '@app/callbacks';
import { flushQueueKeys, waitFor } from './helpers/callbacks';
import { TEST_REDIS_URL } from './helpers/config';

/**
 * The (merchant, destination) key's one structure (SPEC 7 Fairness): slots, circuit and the line
 * of due deliveries. The same table runs against Redis (two clients, as two workers) and against
 * the embedded mode's in-process form, so the Lua scripts and Circuit's functions cannot drift.
 */
const RULES: GateRules = { limit: 2, leaseMs: 30_000, failures: 3, probeMs: 60_000 };

describe.each(['redis', 'in-process'] as const)('DestinationGate (%s)', (mode) => {
  const prefix = `gate-${process.pid}-${Date.now()}-${mode}`;
  let clients: Redis[] = [];
  let gates: DestinationGate[];
  let key = 0;
  /** A fresh key per test. */
  const fresh = () => ({ merchantId: 1, destination: `http://k${++key}.example:80` });

  beforeAll(() => {
    if (mode === 'redis') {
      clients = [new Redis(TEST_REDIS_URL), new Redis(TEST_REDIS_URL)];
      gates = clients.map((r) => new DestinationGate(RULES, r, prefix));
    } else {
      const one = new DestinationGate(RULES, null, prefix);
      gates = [one, one];
    }
  });

  afterAll(async () => {
    if (mode === 'redis') {
      await flushQueueKeys(prefix);
      await Promise.all(clients.map((r) => r.quit()));
    }
  });

  it('admits at most `limit` at once across workers; the others line up and a freed slot admits the oldest', async () => {
    const k = fresh();
    const answers = await Promise.all(['a', 'b', 'c', 'd'].map((id, i) => gates[i % 2].take(k, id)));
    expect(answers.map((a) => a.kind).sort()).toEqual(['run', 'run', 'wait', 'wait']);
    const ran = ['a', 'b', 'c', 'd'].filter((_, i) => answers[i].kind === 'run');
    const waiting = ['a', 'b', 'c', 'd'].filter((_, i) => answers[i].kind === 'wait');
    // Their jobs parked, they join the line.
    expect(await gates[0].lineUp(k, waiting)).toEqual(['wait', 'wait']);
    const released = await gates[1].give(k, ran[0], 'success', false);
    expect(released).toMatchObject({ transition: null, admitted: [waiting[0]], wake: null });
    // The admitted one's slot is reserved for it: its take runs, a newcomer waits.
    expect((await gates[0].take(k, waiting[0])).kind).toBe('run');
    expect((await gates[0].take(k, 'late')).kind).toBe('wait');
  });

  it('enlist gives a slot while there is one, else lines the delivery up; another key and another merchant are not held', async () => {
    const k = fresh();
    expect((await gates[0].enlist(k, ['1', '2', '3'])).map((a) => a.kind)).toEqual(['run', 'run', 'wait']);
    expect(await gates[0].lineUp(k, ['3'])).toEqual(['wait']);
    expect((await gates[1].enlist({ ...k, merchantId: 2 }, ['x'])).map((a) => a.kind)).toEqual(['run']);
    expect((await gates[1].enlist(fresh(), ['y'])).map((a) => a.kind)).toEqual(['run']);
    // Enlisting again (the sweep) changes nothing and keeps its place.
    expect((await gates[1].enlist(k, ['1', '3'])).map((a) => a.kind)).toEqual(['run', 'wait']);
    expect((await gates[0].give(k, '1', 'success', false)).admitted).toEqual(['3']);
  });

  it('a key with many lined up admits them in arrival order, never more than its slots', async () => {
    const k = fresh();
    const ids = Array.from({ length: 50 }, (_, i) => `d${i}`);
    const answers = await gates[0].enlist(k, ids);
    expect(answers.filter((a) => a.kind === 'run')).toHaveLength(2);
    expect(await gates[1].lineUp(k, ids.slice(2))).toEqual(ids.slice(2).map(() => 'wait'));
    const order: string[] = [];
    let running = ['d0', 'd1'];
    while (running.length > 0) {
      const [done, ...rest] = running;
      const { admitted } = await gates[order.length % 2].give(k, done, 'success', false);
      order.push(...admitted);
      running = [...rest, ...admitted];
      expect(running.length).toBeLessThanOrEqual(RULES.limit);
    }
    expect(order).toEqual(ids.slice(2));
  });

  it('opens after `failures` failures in a row (once), holds due deliveries with one waker, lets one probe through at the probe time, and a success closes it and admits the held', async () => {
    const k = fresh();
    await gates[0].enlist(k, ['f1', 'f2']);
    expect((await gates[0].give(k, 'f1', 'failure', false)).transition).toBeNull();
    // Our own failure tells the circuit nothing.
    expect((await gates[1].give(k, 'f2', 'none', false)).transition).toBeNull();
    await gates[0].take(k, 'f3');
    await gates[0].take(k, 'f4');
    expect((await gates[0].give(k, 'f3', 'failure', false)).transition).toBeNull();
    const opened = await gates[1].give(k, 'f4', 'failure', false);
    expect(opened.transition).toBe('opened');
    expect(opened.circuit.openSince).not.toBeNull();
    const probeAt = opened.circuit.nextProbeAt!;
    expect(probeAt).toBeGreaterThan(Date.now() + RULES.probeMs - 5_000);
    // Due deliveries wait without an attempt: the first is the key's waker (back at the probe time), the others wait to be admitted.
    expect(await gates[0].take(k, 'h1')).toEqual({ kind: 'held', wakeAt: probeAt });
    expect(await gates[1].take(k, 'h2')).toEqual({ kind: 'held', wakeAt: null });
    expect(await gates[1].enlist(k, ['h3'])).toEqual([{ kind: 'held', wakeAt: null }]);
    expect(await gates[1].lineUp(k, ['h1', 'h2', 'h3'])).toEqual(['wait', 'wait', 'wait']);
    expect(await gates[0].take(k, 'h1')).toEqual({ kind: 'held', wakeAt: probeAt });
    if (mode === 'in-process') return; // The probe time below is moved in Redis; the process's clock cannot be.
    await clients[0].hset(`${prefix}:callback-key:{${k.merchantId}|${k.destination}}:circuit`, 'next_probe_at', Date.now() - 1);
    expect((await gates[0].take(k, 'h1')).kind).toBe('probe');
    const failedProbe = await gates[0].give(k, 'h1', 'failure', true);
    expect(failedProbe.transition).toBe('probe_failed');
    // The line keeps a waker: the first lined up, promoted so its take parks it until the next probe time.
    expect(failedProbe.wake).toBe('h2');
    const nextProbe = failedProbe.circuit.nextProbeAt!;
    expect(nextProbe).toBeGreaterThan(probeAt);
    expect(await gates[1].take(k, 'h2')).toEqual({ kind: 'held', wakeAt: nextProbe });
    // One probe per interval, one waker per key.
    expect(await gates[1].take(k, 'h3')).toEqual({ kind: 'held', wakeAt: null });
    await clients[0].hset(`${prefix}:callback-key:{${k.merchantId}|${k.destination}}:circuit`, 'next_probe_at', Date.now() - 1);
    expect((await gates[1].take(k, 'h2')).kind).toBe('probe');
    const closed = await gates[1].give(k, 'h2', 'success', true);
    expect(closed.transition).toBe('closed');
    // The probes left the line when they went; what is left in it is admitted.
    expect(closed.admitted).toEqual(['h3']);
  });

  it("one merchant's failures never open another merchant's circuit to the same destination", async () => {
    const k = fresh();
    for (let i = 0; i < RULES.failures; i++) {
      await gates[0].take(k, `x${i}`);
      await gates[0].give(k, `x${i}`, 'failure', false);
    }
    expect((await gates[0].take(k, 'later')).kind).toBe('held');
    expect((await gates[1].take({ ...k, merchantId: 99 }, 'other')).kind).toBe('run');
  });

  it('an operator closing the circuit admits what it held, up to the free slots', async () => {
    const k = fresh();
    for (let i = 0; i < RULES.failures; i++) {
      await gates[0].take(k, `y${i}`);
      await gates[0].give(k, `y${i}`, 'failure', false);
    }
    for (const id of ['p', 'q', 'r']) expect((await gates[1].take(k, id)).kind).toBe('held');
    await gates[1].lineUp(k, ['p', 'q', 'r']);
    expect(await gates[0].close(k)).toEqual(['p', 'q']);
    expect((await gates[0].take(k, 'p')).kind).toBe('run');
  });

  it('the sweep enlists a parked delivery in one step: admitted while a slot is free, else lined up at once (never lined up again after a freed slot admitted it)', async () => {
    const k = fresh();
    await gates[0].enlist(k, ['a', 'b']);
    expect((await gates[0].enlist(k, ['p'], { parked: true })).map((x) => x.kind)).toEqual(['wait']);
    expect((await gates[1].give(k, 'a', 'success', false)).admitted).toEqual(['p']);
    // 'p' runs now; a second sweep pass finds it holding its slot, not waiting.
    expect((await gates[0].enlist(k, ['p'], { parked: true })).map((x) => x.kind)).toEqual(['run']);
    expect((await gates[1].give(k, 'b', 'success', false)).admitted).toEqual([]);
  });

  it('a slot freed between a take and its line-up is not lost: the line-up takes it', async () => {
    const k = fresh();
    await gates[0].enlist(k, ['a', 'b']);
    expect((await gates[0].take(k, 'c')).kind).toBe('wait');
    // 'a' ends while 'c' is being parked: nobody is in the line to admit yet.
    expect((await gates[1].give(k, 'a', 'success', false)).admitted).toEqual([]);
    expect(await gates[0].lineUp(k, ['c'])).toEqual(['run']);
  });

  it("a dead worker's slot comes back when its lease ends", async () => {
    const short =
      mode === 'redis' ? new DestinationGate({ ...RULES, leaseMs: 150 }, clients[0], prefix) : new DestinationGate({ ...RULES, leaseMs: 150 }, null, prefix);
    const k = fresh();
    expect((await short.enlist(k, ['a', 'b'])).map((a) => a.kind)).toEqual(['run', 'run']);
    expect((await short.take(k, 'late')).kind).toBe('wait');
    // Polls the slot itself (the sign that the lease ended).
    await waitFor(async () => (await short.take(k, 'late')).kind === 'run', 5_000, 'the slot freed when the lease ended');
  });
});
