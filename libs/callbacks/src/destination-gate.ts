import type { Redis } from 'ioredis';
import { CLOSED_CIRCUIT, Circuit, type CircuitRules, type CircuitSignal, type CircuitState, type CircuitTransition } from './circuit';

/** SPEC 7 Fairness's key: one merchant's one destination (scheme://host:port from the one URL parser). */
export interface GateKey {
  merchantId: number;
  destination: string;
}

export interface GateRules extends CircuitRules {
  /** CALLBACK_DESTINATION_CONCURRENCY: attempts in flight per key, across every worker. */
  limit: number;
  /** How long a slot is its holder's (or an admitted job's) without word from it: the HTTP budget plus the time to record. */
  leaseMs: number;
}

/**
 * Where a due delivery stands with its key: `run` (a slot is its), `probe` (a slot, as the open
 * circuit's one probe), `wait` (lined up in the key's ready line: a freed slot admits it) or
 * `held` (behind an open circuit; `wakeAt` is set for the one job per key that comes back at the
 * probe time, null for the others, which wait in the line to be admitted). A job that may not go
 * is parked, then lined up (lineUp).
 */
export type GateAnswer = { kind: 'run' } | { kind: 'probe' } | { kind: 'wait' } | { kind: 'held'; wakeAt: number | null };

/** What giving a slot back did: the circuit's change, and the deliveries whose jobs to promote now. */
export interface GateRelease {
  transition: CircuitTransition | null;
  circuit: CircuitState;
  /** Lined-up deliveries given a slot (reserved for them): promote their jobs. */
  admitted: string[];
  /** An open circuit's new waker: promote its job, its take parks it until the probe time. */
  wake: string | null;
}

/** Parked jobs past a probe time by this much let another take over as the key's waker (a lost job). */
const WAKER_GRACE_MS = 60_000;
/** Idle keys leave Redis after this; a key with lined-up deliveries is written to long before. */
const KEY_TTL_MS = 7 * 86_400_000;

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)`;
const LINE_UP = `local function line_up(id)
  if not redis.call('ZSCORE', KEYS[2], id) then
    redis.call('ZADD', KEYS[2], redis.call('HINCRBY', KEYS[3], 'seq', 1), id)
  end
end
local function keep()
  for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ${KEY_TTL_MS}) end
end
-- An open circuit's waker: the job that comes back at the probe time (one per key; a stale one is replaced).
local function waker_free(id, now)
  local w = redis.call('HMGET', KEYS[3], 'waker', 'waker_until')
  return (not w[1]) or w[1] == id or tonumber(w[2]) < now
end`;

/**
 * take(id, leaseMs, limit, probeMs): the job of a due delivery asks to go. {kind, wakeAt}; one
 * that may not go joins the line by line_up once parked.
 * KEYS: held (zset id -> lease end), ready (zset id -> arrival), circuit (hash).
 */
const TAKE = `${NOW}
${LINE_UP}
local id, lease, limit, probe = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local c = redis.call('HMGET', KEYS[3], 'open_since', 'next_probe_at')
keep()
if c[1] then
  local probe_at = tonumber(c[2]) or 0
  if probe_at <= now then
    redis.call('HSET', KEYS[3], 'next_probe_at', now + probe)
    if redis.call('HGET', KEYS[3], 'waker') == id then redis.call('HDEL', KEYS[3], 'waker', 'waker_until') end
    redis.call('ZREM', KEYS[2], id)
    redis.call('ZADD', KEYS[1], now + lease, id)
    return {'probe', 0}
  end
  redis.call('ZREM', KEYS[1], id)
  if waker_free(id, now) then
    redis.call('HSET', KEYS[3], 'waker', id, 'waker_until', probe_at + ${WAKER_GRACE_MS})
    return {'held', probe_at}
  end
  return {'held', 0}
end
if redis.call('ZSCORE', KEYS[1], id) or redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now + lease, id)
  redis.call('ZREM', KEYS[2], id)
  return {'run', 0}
end
return {'wait', 0}`;

/**
 * line_up(lease, limit, ids...): deliveries whose jobs are parked now (never before: a delivery in
 * the line always has a parked job, so whoever admits it can promote it). Each gets a slot if one
 * freed meanwhile ('run': promote it) or joins the line ('wait'), keeping its place if there.
 */
const LINE_UP_SCRIPT = `${NOW}
${LINE_UP}
local lease, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local open = redis.call('HGET', KEYS[3], 'open_since')
keep()
local out = {}
for i = 3, #ARGV do
  local id = ARGV[i]
  if redis.call('ZSCORE', KEYS[1], id) then
    table.insert(out, 'run')
  elseif (not open) and redis.call('ZCARD', KEYS[1]) < limit then
    redis.call('ZADD', KEYS[1], now + lease, id)
    redis.call('ZREM', KEYS[2], id)
    table.insert(out, 'run')
  else
    line_up(id)
    table.insert(out, 'wait')
  end
end
return out`;

/**
 * enlist(leaseMs, limit, parked, ids...): deliveries just due (a new job, the sweep): each gets a
 * slot ('run', 0) or not ('wait', 0; 'held', wakeAt for an open circuit's waker, else 0). Those
 * without one join the line: here when their jobs are parked already (the sweep), else by
 * line_up once parked.
 */
const ENLIST = `${NOW}
${LINE_UP}
local lease, limit, parked = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1'
local c = redis.call('HMGET', KEYS[3], 'open_since', 'next_probe_at')
keep()
local out = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  if redis.call('ZSCORE', KEYS[1], id) then
    table.insert(out, 'run'); table.insert(out, 0)
  elseif c[1] then
    if parked then line_up(id) end
    if waker_free(id, now) then
      local probe_at = tonumber(c[2]) or now
      redis.call('HSET', KEYS[3], 'waker', id, 'waker_until', probe_at + ${WAKER_GRACE_MS})
      table.insert(out, 'held'); table.insert(out, probe_at)
    else
      table.insert(out, 'held'); table.insert(out, 0)
    end
  elseif redis.call('ZCARD', KEYS[1]) < limit then
    redis.call('ZADD', KEYS[1], now + lease, id)
    redis.call('ZREM', KEYS[2], id)
    table.insert(out, 'run'); table.insert(out, 0)
  else
    if parked then line_up(id) end
    table.insert(out, 'wait'); table.insert(out, 0)
  end
end
return out`;

/**
 * give(id, signal, probe, failures, probeMs, limit, leaseMs): an attempt ended. Frees its slot,
 * stores the circuit's transition (Circuit.after), and admits the next lined-up deliveries while
 * the circuit is closed, or names a waker while it is open.
 * Returns {transition, failures, open_since, next_probe_at, wake, admitted...}.
 */
const GIVE = `${NOW}
${LINE_UP}
local id, signal, probe, to_open, probe_ms, limit, lease = ARGV[1], ARGV[2], ARGV[3] == '1', tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
redis.call('ZREM', KEYS[1], id)
keep()
local c = redis.call('HMGET', KEYS[3], 'open_since', 'failures')
local open, failures, transition = c[1], tonumber(c[2]) or 0, ''
if signal == 'success' then
  if open then transition = 'closed' end
  redis.call('HDEL', KEYS[3], 'open_since', 'next_probe_at', 'waker', 'waker_until', 'failures')
  open, failures = false, 0
elseif signal == 'failure' then
  failures = failures + 1
  redis.call('HSET', KEYS[3], 'failures', failures)
  if open then
    if probe then transition = 'probe_failed' end
  elseif failures >= to_open then
    open = tostring(now)
    redis.call('HSET', KEYS[3], 'open_since', now, 'next_probe_at', now + probe_ms)
    transition = 'opened'
  end
end
local out = {transition, failures, open or '', redis.call('HGET', KEYS[3], 'next_probe_at') or '', ''}
if open then
  local first = redis.call('ZRANGE', KEYS[2], 0, 0)
  if first[1] and waker_free(first[1], now) and redis.call('HGET', KEYS[3], 'waker') ~= first[1] then
    redis.call('HSET', KEYS[3], 'waker', first[1], 'waker_until', (tonumber(out[4]) or now) + ${WAKER_GRACE_MS})
    out[5] = first[1]
  end
else
  local free = limit - redis.call('ZCARD', KEYS[1])
  while free > 0 do
    local next = redis.call('ZPOPMIN', KEYS[2], 1)
    if not next[1] then break end
    redis.call('ZADD', KEYS[1], now + lease, next[1])
    table.insert(out, next[1])
    free = free - 1
  end
end
return out`;

/** close(limit, leaseMs): an operator closed the circuit (callback:circuit:reset): admits what it held, up to the free slots. */
const CLOSE = `${NOW}
local limit, lease = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('HDEL', KEYS[3], 'open_since', 'next_probe_at', 'waker', 'waker_until', 'failures')
local out = {}
local free = limit - redis.call('ZCARD', KEYS[1])
while free > 0 do
  local next = redis.call('ZPOPMIN', KEYS[2], 1)
  if not next[1] then break end
  redis.call('ZADD', KEYS[1], now + lease, next[1])
  table.insert(out, next[1])
  free = free - 1
end
return out`;

type GateCommands = Redis & {
  callbackGateTake(h: string, r: string, c: string, id: string, lease: number, limit: number, probeMs: number): Promise<[string, number]>;
  callbackGateEnlist(h: string, r: string, c: string, lease: number, limit: number, parked: number, ...ids: string[]): Promise<(string | number)[]>;
  callbackGateLineUp(h: string, r: string, c: string, lease: number, limit: number, ...ids: string[]): Promise<string[]>;
  callbackGateGive(
    h: string,
    r: string,
    c: string,
    id: string,
    signal: CircuitSignal,
    probe: number,
    failures: number,
    probeMs: number,
    limit: number,
    lease: number,
  ): Promise<string[]>;
  callbackGateClose(h: string, r: string, c: string, limit: number, lease: number): Promise<string[]>;
};

/** The in-process keys, per QUEUE_PREFIX. */
const IN_PROCESS = new Map<string, Map<string, LocalKey>>();

interface LocalKey {
  held: Map<string, number>;
  ready: Map<string, number>;
  seq: number;
  circuit: CircuitState;
  waker: { id: string; until: number } | null;
}

/**
 * One structure per (merchant, destination) key, shared by every worker (SPEC 7 Fairness): its
 * slots in flight, its circuit, and its line of due deliveries waiting for a slot or a probe.
 * On Redis, three keys under one hash tag and four Lua scripts, each atomic on its key; in the
 * embedded mode, where one process is every worker, the same in a map (Circuit's own functions).
 * A due delivery's job enters BullMQ's wait list only once its key admits it, so BullMQ's one
 * FIFO holds at most `limit` deliveries of a key: a key with 100,000 due gets its turn like one
 * with one. See docs/callbacks-design.md.
 */
export class DestinationGate {
  /** In the embedded mode the API and the worker are two apps of one process: one map per prefix, shared by both. */
  private readonly local: Map<string, LocalKey>;
  private unwired = false;

  constructor(
    readonly rules: GateRules,
    private readonly redis: Redis | null,
    private readonly prefix: string,
    /** REDIS_URL is set: every call needs the shared Redis; none given is a wiring fault, never a silent in-process gate. */
    private readonly needsRedis = false,
  ) {
    if (needsRedis && !redis) this.unwired = true;
    let local = IN_PROCESS.get(prefix);
    if (!local) IN_PROCESS.set(prefix, (local = new Map()));
    this.local = local;
    redis?.defineCommand('callbackGateTake', { numberOfKeys: 3, lua: TAKE });
    redis?.defineCommand('callbackGateEnlist', { numberOfKeys: 3, lua: ENLIST });
    redis?.defineCommand('callbackGateLineUp', { numberOfKeys: 3, lua: LINE_UP_SCRIPT });
    redis?.defineCommand('callbackGateGive', { numberOfKeys: 3, lua: GIVE });
    redis?.defineCommand('callbackGateClose', { numberOfKeys: 3, lua: CLOSE });
  }

  /**
   * Whether every process sees the same keys (Redis). Without Redis each process has its own map:
   * only the worker's counts (the embedded mode is one process; a worker apart from its API
   * still counts its own attempts), so enlisting at enqueue is skipped there (CallbackJobs).
   */
  get shared(): boolean {
    return this.redis !== null;
  }

  /**
   * Deliveries of one key just due: each answer says whether its job may go now. New jobs are
   * added accordingly and then lined up (lineUp); `parked`: their jobs are parked already (the
   * sweep), so those not admitted join the line in the same step.
   */
  async enlist(key: GateKey, ids: string[], options: { parked?: boolean; leaseMs?: number } = {}): Promise<GateAnswer[]> {
    if (ids.length === 0) return [];
    const { limit } = this.rules;
    const leaseMs = options.leaseMs ?? this.rules.leaseMs;
    if (this.redis) {
      const flat = await (this.redis as GateCommands).callbackGateEnlist(...this.keys(key), leaseMs, limit, options.parked ? 1 : 0, ...ids);
      const answers: GateAnswer[] = [];
      for (let i = 0; i < flat.length; i += 2) answers.push(answer(String(flat[i]), Number(flat[i + 1])));
      return answers;
    }
    const k = this.localKey(key);
    const now = expire(k);
    return ids.map((id) => {
      if (k.held.has(id)) return { kind: 'run' };
      if (k.circuit.openSince !== null) {
        if (options.parked) lineUp(k, id);
        return this.localHold(k, id, now);
      }
      if (k.held.size < limit) {
        k.held.set(id, now + leaseMs);
        k.ready.delete(id);
        return { kind: 'run' };
      }
      if (options.parked) lineUp(k, id);
      return { kind: 'wait' };
    });
  }

  /**
   * Deliveries whose jobs are parked now join their key's line (never before: whoever admits one
   * from the line promotes its parked job). `run`: a slot freed meanwhile and is theirs (promote them).
   */
  async lineUp(key: GateKey, ids: string[], leaseMs = this.rules.leaseMs): Promise<('run' | 'wait')[]> {
    if (ids.length === 0) return [];
    const { limit } = this.rules;
    if (this.redis) return (await (this.redis as GateCommands).callbackGateLineUp(...this.keys(key), leaseMs, limit, ...ids)) as ('run' | 'wait')[];
    const k = this.localKey(key);
    const now = expire(k);
    return ids.map((id) => {
      if (k.held.has(id)) return 'run';
      if (k.circuit.openSince === null && k.held.size < limit) {
        k.held.set(id, now + leaseMs);
        k.ready.delete(id);
        return 'run';
      }
      lineUp(k, id);
      return 'wait';
    });
  }

  /** The job of a due delivery asks to go now. */
  async take(key: GateKey, id: string, leaseMs = this.rules.leaseMs): Promise<GateAnswer> {
    const { limit, probeMs } = this.rules;
    if (this.redis) {
      const [kind, wakeAt] = await (this.redis as GateCommands).callbackGateTake(...this.keys(key), id, leaseMs, limit, probeMs);
      return answer(kind, Number(wakeAt));
    }
    const k = this.localKey(key);
    const now = expire(k);
    const admits = Circuit.admits(k.circuit, now);
    if (admits === 'probe') {
      k.circuit = Circuit.probing(k.circuit, this.rules, now);
      if (k.waker?.id === id) k.waker = null;
      k.ready.delete(id);
      k.held.set(id, now + leaseMs);
      return { kind: 'probe' };
    }
    if (admits === 'held') {
      k.held.delete(id);
      return this.localHold(k, id, now);
    }
    if (k.held.has(id) || k.held.size < limit) {
      k.held.set(id, now + leaseMs);
      k.ready.delete(id);
      return { kind: 'run' };
    }
    return { kind: 'wait' };
  }

  /** An attempt ended: its slot back, its circuit told `signal`, and who goes next. */
  async give(key: GateKey, id: string, signal: CircuitSignal, probe: boolean): Promise<GateRelease> {
    const { limit, leaseMs, failures, probeMs } = this.rules;
    if (this.redis) {
      const out = await (this.redis as GateCommands).callbackGateGive(...this.keys(key), id, signal, probe ? 1 : 0, failures, probeMs, limit, leaseMs);
      const [transition, count, openSince, nextProbeAt, wake, ...admitted] = out.map(String);
      return {
        transition: (transition || null) as CircuitTransition | null,
        circuit: { failures: Number(count), openSince: openSince ? Number(openSince) : null, nextProbeAt: nextProbeAt ? Number(nextProbeAt) : null },
        admitted,
        wake: wake || null,
      };
    }
    const k = this.localKey(key);
    const now = expire(k);
    k.held.delete(id);
    const { state, transition } = Circuit.after(k.circuit, signal, this.rules, now, probe);
    k.circuit = state;
    if (state.openSince === null) k.waker = null;
    let wake: string | null = null;
    const admitted: string[] = [];
    if (state.openSince !== null) {
      const first = k.ready.keys().next();
      if (!first.done && k.waker?.id !== first.value && (!k.waker || k.waker.until < now)) {
        k.waker = { id: first.value, until: (state.nextProbeAt ?? now) + WAKER_GRACE_MS };
        wake = first.value;
      }
    } else {
      this.localAdmit(k, now, admitted);
    }
    this.forget(key, k);
    return { transition, circuit: state, admitted, wake };
  }

  /**
   * The deliveries holding a slot of this key now (leases not ended): each is running or admitted
   * and about to be promoted. The sweep checks them (CallbackSweeper.reconcileSlots): one whose
   * job sits parked or has ended holds a slot for nobody.
   */
  async holders(key: GateKey): Promise<string[]> {
    if (this.redis) {
      const [held] = this.keys(key);
      return this.redis.zrangebyscore(held, Date.now(), '+inf');
    }
    const k = this.local.get(`${key.merchantId}|${key.destination}`);
    if (!k) return [];
    expire(k);
    return [...k.held.keys()];
  }

  /** callback:circuit:reset: the circuit closed as a probe's success would; answers the lined-up deliveries admitted now. */
  async close(key: GateKey): Promise<string[]> {
    const { limit, leaseMs } = this.rules;
    if (this.redis) return (await (this.redis as GateCommands).callbackGateClose(...this.keys(key), limit, leaseMs)).map(String);
    const k = this.localKey(key);
    const now = expire(k);
    k.circuit = CLOSED_CIRCUIT;
    k.waker = null;
    const admitted: string[] = [];
    this.localAdmit(k, now, admitted);
    return admitted;
  }

  private localAdmit(k: LocalKey, now: number, admitted: string[]): void {
    // A Map keeps insertion order, and lineUp only inserts: the oldest first.
    for (const id of k.ready.keys()) {
      if (k.held.size >= this.rules.limit) break;
      k.ready.delete(id);
      k.held.set(id, now + this.rules.leaseMs);
      admitted.push(id);
    }
  }

  private localHold(k: LocalKey, id: string, now: number): GateAnswer {
    if (!k.waker || k.waker.id === id || k.waker.until < now) {
      const probeAt = k.circuit.nextProbeAt ?? now;
      k.waker = { id, until: probeAt + WAKER_GRACE_MS };
      return { kind: 'held', wakeAt: probeAt };
    }
    return { kind: 'held', wakeAt: null };
  }

  private keys(key: GateKey): [string, string, string] {
    if (this.unwired) throw new Error('DestinationGate: REDIS_URL is set but no shared Redis client was given (import RedisModule)');
    // One hash tag: the three keys of a destination live on one cluster node, so each script is atomic there.
    const base = `${this.prefix}:callback-key:{${key.merchantId}|${key.destination}}`;
    return [`${base}:held`, `${base}:ready`, `${base}:circuit`];
  }

  private localKey(key: GateKey): LocalKey {
    if (this.unwired) throw new Error('DestinationGate: REDIS_URL is set but no shared Redis client was given (import RedisModule)');
    const name = `${key.merchantId}|${key.destination}`;
    let k = this.local.get(name);
    if (!k) this.local.set(name, (k = { held: new Map(), ready: new Map(), seq: 0, circuit: CLOSED_CIRCUIT, waker: null }));
    return k;
  }

  private forget(key: GateKey, k: LocalKey): void {
    if (k.held.size === 0 && k.ready.size === 0 && k.circuit.openSince === null && k.circuit.failures === 0)
      this.local.delete(`${key.merchantId}|${key.destination}`);
  }
}

function answer(kind: string, wakeAt: number): GateAnswer {
  if (kind === 'held') return { kind, wakeAt: wakeAt > 0 ? wakeAt : null };
  return { kind } as GateAnswer;
}

function expire(k: LocalKey): number {
  const now = Date.now();
  for (const [id, until] of k.held) if (until <= now) k.held.delete(id);
  return now;
}

function lineUp(k: LocalKey, id: string): void {
  if (!k.ready.has(id)) k.ready.set(id, ++k.seq);
}
