import { MAX_RETRY_AFTER_MS, parseRetryAfter, retryDelayMs } from './retry-policy';

const SCHEDULE = [15_000, 15_000, 30_000, 180_000];

describe('retry policy', () => {
  it('follows the schedule with at most 10% jitter', () => {
    expect(retryDelayMs(SCHEDULE, 1, null, () => 0)).toBe(15_000);
    expect(retryDelayMs(SCHEDULE, 3, null, () => 0.999)).toBe(Math.round(30_000 * 1.0999));
    for (let i = 0; i < 100; i++) {
      const d = retryDelayMs(SCHEDULE, 4);
      expect(d).toBeGreaterThanOrEqual(180_000);
      expect(d).toBeLessThanOrEqual(198_000);
    }
  });

  it('honours a longer Retry-After, capped at 6 h', () => {
    expect(retryDelayMs(SCHEDULE, 1, 120_000, () => 0)).toBe(120_000);
    expect(retryDelayMs(SCHEDULE, 1, 1_000, () => 0)).toBe(15_000);
    expect(retryDelayMs(SCHEDULE, 1, 48 * 3_600_000, () => 0)).toBe(MAX_RETRY_AFTER_MS);
  });

  it('parses Retry-After seconds and dates', () => {
    expect(parseRetryAfter('120')).toBe(120_000);
    expect(parseRetryAfter(new Date(10_000 + 30_000).toUTCString(), 10_000)).toBe(30_000);
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter(undefined)).toBeNull();
  });
});
