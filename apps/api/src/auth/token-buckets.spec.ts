import { TokenBuckets, takeToken } from './token-buckets';

describe('takeToken (SPEC 8: a steady rate per second plus a burst)', () => {
  it('starts full: the burst passes at once, the next request waits for one token at the steady rate', () => {
    let state;
    const answers: number[] = [];
    for (let i = 0; i < 5; i++) {
      const taken = takeToken(state, 1_000, 2, 4);
      state = taken.state;
      answers.push(taken.retryAfterMs);
    }
    expect(answers).toEqual([0, 0, 0, 0, 500]);
  });

  it('refills at the steady rate, never above the burst', () => {
    const empty = { tokens: 0, atMs: 0 };
    expect(takeToken(empty, 499, 2, 4).retryAfterMs).toBe(2);
    expect(takeToken(empty, 500, 2, 4)).toEqual({ state: { tokens: 0, atMs: 500 }, retryAfterMs: 0 });
    expect(takeToken(empty, 60_000, 2, 4).state.tokens).toBe(3);
  });

  it('a clock going backwards refills nothing', () => {
    expect(takeToken({ tokens: 0.5, atMs: 10_000 }, 9_000, 2, 4).retryAfterMs).toBe(250);
  });
});

describe('TokenBuckets (the embedded mode, in memory)', () => {
  it('keeps one bucket per key', () => {
    const buckets = new TokenBuckets(1, 2);
    expect([buckets.take('a', 0), buckets.take('a', 0), buckets.take('a', 0)]).toEqual([0, 0, 1000]);
    expect(buckets.take('b', 0)).toBe(0);
    expect(buckets.take('a', 1_000)).toBe(0);
  });

  it('sustains the steady rate, not the burst, over a long run', () => {
    const buckets = new TokenBuckets(10, 20);
    let admitted = 0;
    for (let ms = 0; ms < 10_000; ms += 10) if (buckets.take('k', ms) === 0) admitted++;
    // 20 at once, then 10 per second for the remaining 9.99 s.
    expect(admitted).toBe(20 + 99);
  });
});
