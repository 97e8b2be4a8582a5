import { DeliveryPolicy } from './delivery-policy';
import { MAX_RETRY_AFTER_MS } from './retry-policy';

const SCHEDULE = [15_000, 15_000, 30_000];
const ok = { ok: true, httpStatus: 200, retryAfterMs: null };
const failed = (httpStatus: number | null, retryAfterMs: number | null = null) => ({ ok: false, httpStatus, retryAfterMs });

describe('DeliveryPolicy (SPEC 7: what follows one attempt)', () => {
  const policy = new DeliveryPolicy(SCHEDULE, () => 0);

  it('gives the first attempt plus one per scheduled delay', () => {
    expect(policy.maxAttempts).toBe(4);
    expect(policy.afterAttempt({ number: 3, outcome: failed(500), ourSide: false }).state).toBe('pending');
    expect(policy.afterAttempt({ number: 4, outcome: failed(500), ourSide: false }).state).toBe('failed');
  });

  it('a success settles the delivery and closes the circuit, on any attempt', () => {
    expect(policy.afterAttempt({ number: 1, outcome: ok, ourSide: false })).toEqual({ state: 'succeeded', circuit: 'success' });
    expect(policy.afterAttempt({ number: 4, outcome: ok, ourSide: false })).toEqual({ state: 'succeeded', circuit: 'success' });
  });

  it('a failure before the last attempt retries after the schedule delay of that attempt and counts against the circuit', () => {
    expect(policy.afterAttempt({ number: 1, outcome: failed(500), ourSide: false })).toEqual({ state: 'pending', retryInMs: 15_000, circuit: 'failure' });
    expect(policy.afterAttempt({ number: 3, outcome: failed(null), ourSide: false })).toEqual({ state: 'pending', retryInMs: 30_000, circuit: 'failure' });
  });

  it('the jitter adds at most 10%', () => {
    const jittery = new DeliveryPolicy(SCHEDULE, () => 0.999);
    const verdict = jittery.afterAttempt({ number: 2, outcome: failed(502), ourSide: false });
    expect(verdict).toEqual({ state: 'pending', retryInMs: Math.round(15_000 * 1.0999), circuit: 'failure' });
  });

  it('the last attempt failing ends the delivery: no attempt one too many', () => {
    expect(policy.afterAttempt({ number: 4, outcome: failed(500), ourSide: false })).toEqual({ state: 'failed', reason: 'exhausted', circuit: 'failure' });
    expect(policy.afterAttempt({ number: 3, outcome: failed(500), ourSide: false }).state).toBe('pending');
  });

  it('a refused (private) address ends the delivery after 3 attempts, not the whole schedule', () => {
    const long = new DeliveryPolicy([1000, 1000, 1000, 1000, 1000], () => 0);
    const blocked = { ok: false, httpStatus: null, retryAfterMs: null, blocked: true };
    expect(long.afterAttempt({ number: 2, outcome: blocked, ourSide: false }).state).toBe('pending');
    expect(long.afterAttempt({ number: 3, outcome: blocked, ourSide: false })).toEqual({ state: 'failed', reason: 'blocked', circuit: 'failure' });
    // An ordinary failure on the third attempt goes on.
    expect(long.afterAttempt({ number: 3, outcome: failed(500), ourSide: false }).state).toBe('pending');
  });

  it('410 ends the delivery at once', () => {
    expect(policy.afterAttempt({ number: 1, outcome: failed(410), ourSide: false })).toEqual({ state: 'failed', reason: 'gone', circuit: 'failure' });
  });

  it('a longer Retry-After on 429/503 is honoured, capped at 6 h', () => {
    expect(policy.afterAttempt({ number: 1, outcome: failed(429, 120_000), ourSide: false })).toMatchObject({ retryInMs: 120_000 });
    expect(policy.afterAttempt({ number: 1, outcome: failed(503, 1_000), ourSide: false })).toMatchObject({ retryInMs: 15_000 });
    expect(policy.afterAttempt({ number: 1, outcome: failed(503, 48 * 3_600_000), ourSide: false })).toMatchObject({ retryInMs: MAX_RETRY_AFTER_MS });
  });

  it('our own failures (no address, nonce store down) keep the schedule but never count against the circuit', () => {
    expect(policy.afterAttempt({ number: 1, outcome: failed(null), ourSide: true })).toEqual({ state: 'pending', retryInMs: 15_000, circuit: 'none' });
    expect(policy.afterAttempt({ number: 4, outcome: failed(null), ourSide: true })).toEqual({ state: 'failed', reason: 'exhausted', circuit: 'none' });
  });
});
