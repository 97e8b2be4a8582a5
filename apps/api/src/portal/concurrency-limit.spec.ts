import { ConcurrencyLimit } from './concurrency-limit';

describe('ConcurrencyLimit', () => {
  it('runs at most max tasks at once, every task once, in arrival order', async () => {
    const limit = new ConcurrencyLimit(2);
    let inFlight = 0;
    let most = 0;
    const started: number[] = [];
    const releases: (() => void)[] = [];
    const results = Array.from({ length: 6 }, (_, i) =>
      limit.run(async () => {
        started.push(i);
        most = Math.max(most, ++inFlight);
        await new Promise<void>((release) => releases.push(release));
        inFlight--;
        return i;
      }),
    );
    // Let the first two start; the rest wait.
    await Promise.resolve();
    expect([started, limit.queued]).toEqual([[0, 1], 4]);
    while (releases.length > 0 || started.length < 6) {
      releases.shift()?.();
      await new Promise((r) => setImmediate(r));
    }
    expect(await Promise.all(results)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    expect(most).toBe(2);
  });

  it('frees the slot of a task that failed', async () => {
    const limit = new ConcurrencyLimit(1);
    await expect(limit.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await limit.run(async () => 'next')).toBe('next');
    expect(limit.queued).toBe(0);
  });
});
