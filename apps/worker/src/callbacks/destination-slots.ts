import type { Redis } from 'ioredis';

/** SPEC 7 Fairness's key: one merchant's one destination (scheme://host:port from the one URL parser). */
export interface SlotKey {
  merchantId: number;
  destination: string;
}

/**
 * Takes a slot of the key, or parks the holder in the key's line: 1 taken, 0 parked. Expired
 * holders (a worker that died mid-attempt) are dropped first, so a slot is never lost for longer
 * than a lease. Redis's own clock, so every worker counts the same way.
 */
const TAKE = `
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ms + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
redis.call('LREM', KEYS[2], 0, ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], 86400000)
return 0`;

/** Frees the holder's slot and hands back the first parked holder of the key to wake, if any. */
const GIVE = `
redis.call('ZREM', KEYS[1], ARGV[1])
return redis.call('LPOP', KEYS[2])`;

type SlotCommands = Redis & {
  callbackSlotTake(holders: string, line: string, holder: string, leaseMs: number, limit: number): Promise<number>;
  callbackSlotGive(holders: string, line: string, holder: string): Promise<string | null>;
};

/**
 * CALLBACK_DESTINATION_CONCURRENCY per (merchant, destination), across every worker: two Lua
 * scripts on Redis (each atomic, touching only its key's two entries), or a map in the process
 * in the embedded mode, where one process is every worker. A holder that finds no slot waits
 * in the key's line; whoever frees a slot wakes the first in line.
 */
export class DestinationSlots {
  private readonly local = new Map<string, { holders: Map<string, number>; line: string[] }>();

  constructor(
    private readonly limit: number,
    private readonly redis: Redis | null,
    private readonly prefix: string,
  ) {
    redis?.defineCommand('callbackSlotTake', { numberOfKeys: 2, lua: TAKE });
    redis?.defineCommand('callbackSlotGive', { numberOfKeys: 2, lua: GIVE });
  }

  async take(key: SlotKey, holder: string, leaseMs: number): Promise<boolean> {
    if (this.redis) {
      const [holders, line] = this.keys(key);
      return (await (this.redis as SlotCommands).callbackSlotTake(holders, line, holder, leaseMs, this.limit)) === 1;
    }
    const slots = this.localSlots(key);
    const now = Date.now();
    for (const [h, until] of slots.holders) if (until <= now) slots.holders.delete(h);
    if (slots.holders.has(holder) || slots.holders.size < this.limit) {
      slots.holders.set(holder, now + leaseMs);
      return true;
    }
    if (!slots.line.includes(holder)) slots.line.push(holder);
    return false;
  }

  /** Frees the slot; returns the first holder parked in the key's line, to wake. */
  async give(key: SlotKey, holder: string): Promise<string | null> {
    if (this.redis) {
      const [holders, line] = this.keys(key);
      return (this.redis as SlotCommands).callbackSlotGive(holders, line, holder);
    }
    const name = this.localName(key);
    const slots = this.local.get(name);
    if (!slots) return null;
    slots.holders.delete(holder);
    const next = slots.line.shift() ?? null;
    if (slots.holders.size === 0 && slots.line.length === 0) this.local.delete(name);
    return next;
  }

  private keys(key: SlotKey): [string, string] {
    // One hash tag: both keys of a destination live on one cluster node, so each script is atomic there.
    const tag = `{${key.merchantId}|${key.destination}}`;
    return [`${this.prefix}:callback-slots:${tag}:holders`, `${this.prefix}:callback-slots:${tag}:line`];
  }

  private localName(key: SlotKey): string {
    return `${key.merchantId}|${key.destination}`;
  }

  private localSlots(key: SlotKey): { holders: Map<string, number>; line: string[] } {
    const name = this.localName(key);
    let slots = this.local.get(name);
    if (!slots) this.local.set(name, (slots = { holders: new Map(), line: [] }));
    return slots;
  }
}
