/** A bucket's tokens at a moment; full when absent. */
export interface BucketState {
  tokens: number;
  atMs: number;
}

/** Beyond this many keys, full buckets (the same as absent ones) are forgotten. */
const PRUNE_AT = 10_000;

/**
 * SPEC 8's per-api_key limit as a token bucket: `burst` tokens, refilled at `perSecond`.
 * Takes one token, or answers how long until one is there. TAKE_TOKEN_LUA below is the same
 * arithmetic for the Redis admission script (SignedRequestAdmission): both live here, so a change
 * to one is made beside the other.
 */
export function takeToken(state: BucketState | undefined, nowMs: number, perSecond: number, burst: number): { state: BucketState; retryAfterMs: number } {
  const elapsed = state ? Math.max(0, nowMs - state.atMs) : 0;
  const tokens = state ? Math.min(burst, state.tokens + (elapsed * perSecond) / 1000) : burst;
  if (tokens < 1) return { state: { tokens, atMs: nowMs }, retryAfterMs: Math.ceil(((1 - tokens) * 1000) / perSecond) };
  return { state: { tokens: tokens - 1, atMs: nowMs }, retryAfterMs: 0 };
}

/**
 * takeToken in Lua, on Redis's clock, for the admission script: KEYS[3] the bucket, ARGV[3] tokens
 * per second, ARGV[4] burst; returns {3, ms} when no token is there, else falls through with one taken.
 */
export const TAKE_TOKEN_LUA = `local perSecond = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local bucket = redis.call('HMGET', KEYS[3], 'tokens', 'at')
local tokens = burst
if bucket[1] then
  tokens = math.min(burst, tonumber(bucket[1]) + math.max(0, now - tonumber(bucket[2])) * perSecond / 1000)
end
if tokens < 1 then
  return {3, math.ceil((1 - tokens) * 1000 / perSecond)}
end
redis.call('HSET', KEYS[3], 'tokens', tostring(tokens - 1), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[3], math.ceil(burst * 1000 / perSecond) + 1000)`;

/** Token buckets by key in this process: the limit without Redis (the embedded mode's one process). */
export class TokenBuckets {
  private readonly buckets = new Map<string, BucketState>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
  ) {}

  /** 0 when a token was taken, else the milliseconds until one is there. */
  take(key: string, nowMs = Date.now()): number {
    const { state, retryAfterMs } = takeToken(this.buckets.get(key), nowMs, this.perSecond, this.burst);
    if (this.buckets.size >= PRUNE_AT && !this.buckets.has(key)) this.prune(nowMs);
    this.buckets.set(key, state);
    return retryAfterMs;
  }

  private prune(nowMs: number): void {
    const refillMs = (this.burst * 1000) / this.perSecond;
    for (const [key, state] of this.buckets) if (nowMs - state.atMs >= refillMs) this.buckets.delete(key);
  }
}
