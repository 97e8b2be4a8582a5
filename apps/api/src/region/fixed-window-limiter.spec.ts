import { FixedWindowLimiter } from './fixed-window-limiter';

describe('FixedWindowLimiter', () => {
  let now: number;
  const limiter = (points: number) => new FixedWindowLimiter(points, 1000, () => now);
  beforeEach(() => {
    now = 1_000_000;
  });

  it('lets `points` requests of a key in per window and answers the time left for the next', () => {
    const limit = limiter(3);
    expect([limit.consume('a'), limit.consume('a'), limit.consume('a')]).toEqual([0, 0, 0]);
    now += 400;
    expect(limit.consume('a')).toBe(600);
    now += 599;
    expect(limit.consume('a')).toBe(1);
  });

  it('opens a new window at the first request after the old one ended', () => {
    const limit = limiter(1);
    expect(limit.consume('a')).toBe(0);
    expect(limit.consume('a')).toBe(1000);
    now += 1000;
    expect(limit.consume('a')).toBe(0);
    now += 999;
    expect(limit.consume('a')).toBe(1);
  });

  it('keeps one window per key', () => {
    const limit = limiter(1);
    expect(limit.consume('198.51.100.7')).toBe(0);
    expect(limit.consume('198.51.100.8')).toBe(0);
    expect(limit.consume('198.51.100.7')).toBeGreaterThan(0);
  });

  it('forgets keys whose window ended, so addresses seen once do not pile up', () => {
    const limit = limiter(5);
    for (let i = 0; i < 100; i++) limit.consume(`10.0.0.${i}`);
    expect(limit.size).toBe(100);
    now += 1000;
    limit.consume('10.0.1.1');
    expect(limit.size).toBe(1);
  });
});
