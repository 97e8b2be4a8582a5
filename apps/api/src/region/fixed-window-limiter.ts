interface Window {
  count: number;
  endsAt: number;
}

/**
 * At most `points` per key in each `durationMs` window, the window starting with the key's first
 * request: the rule rate-limiter-flexible's RateLimiterMemory applies, answered synchronously.
 * Its promise and its timer per key cost more than serving a small region answer.
 */
export class FixedWindowLimiter {
  private readonly windows = new Map<string, Window>();
  private sweptAt: number;

  /** `points` is at least 1 (config validates RATE_LIMIT_IP_PER_SECOND). */
  constructor(
    private readonly points: number,
    private readonly durationMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.sweptAt = now();
  }

  /** Counts one request of `key`: 0 when it is let in, else the milliseconds until its window ends. */
  consume(key: string): number {
    const now = this.now();
    this.sweepExpired(now);
    const window = this.windows.get(key);
    if (window === undefined || window.endsAt <= now) {
      this.windows.set(key, { count: 1, endsAt: now + this.durationMs });
      return 0;
    }
    window.count++;
    return window.count <= this.points ? 0 : window.endsAt - now;
  }

  /** Keys seen once and never again must not stay in memory: drop the ended windows once per window length. */
  private sweepExpired(now: number): void {
    if (now - this.sweptAt < this.durationMs) return;
    this.sweptAt = now;
    for (const [key, window] of this.windows) if (window.endsAt <= now) this.windows.delete(key);
  }

  /** Keys held, for tests of the sweep. */
  get size(): number {
    return this.windows.size;
  }
}
