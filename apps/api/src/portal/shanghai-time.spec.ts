import { formatShanghai, lastShanghaiDays, shanghaiDay, shanghaiDayStart } from './shanghai-time';

describe('Asia/Shanghai times', () => {
  it('writes instants in UTC+8', () => {
    expect(formatShanghai(new Date('2025-11-21T16:30:05Z'))).toBe('2025-11-22 00:30:05');
    expect(formatShanghai(1763700000)).toBe('2025-11-21 12:40:00');
    expect(shanghaiDay(new Date('2025-12-31T15:59:59Z'))).toBe('2025-12-31');
    expect(shanghaiDay(new Date('2025-12-31T16:00:00Z'))).toBe('2026-01-01');
  });

  it('reads a day as its Shanghai midnight, refusing days that do not exist', () => {
    expect(shanghaiDayStart('2025-11-22')).toBe(Date.parse('2025-11-21T16:00:00Z') / 1000);
    for (const bad of ['2025-02-30', '2025-13-01', '22-11-2025', '', '2025-11-22T00:00']) expect(shanghaiDayStart(bad)).toBeNull();
  });

  it('lists the last n days ending today in Shanghai', () => {
    const { days, since } = lastShanghaiDays(14, new Date('2025-11-21T17:00:00Z'));
    expect(days).toHaveLength(14);
    expect(days[13]).toBe('2025-11-22');
    expect(days[0]).toBe('2025-11-09');
    expect(since.toISOString()).toBe('2025-11-08T16:00:00.000Z');
  });
});
