/** China has kept UTC+8 without daylight saving since 1991: a fixed offset is exact for every time the service holds. */
const OFFSET_MS = 8 * 3600 * 1000;
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** 2025-11-21 12:00:00, in Asia/Shanghai. */
export function formatShanghai(at: Date | number): string {
  const ms = typeof at === 'number' ? at * 1000 : at.getTime();
  return new Date(ms + OFFSET_MS).toISOString().slice(0, 19).replace('T', ' ');
}

/** YYYY-MM-DD of the day in Asia/Shanghai. */
export function shanghaiDay(at: Date): string {
  return new Date(at.getTime() + OFFSET_MS).toISOString().slice(0, 10);
}

/** Unix seconds of 00:00:00 in Asia/Shanghai of a YYYY-MM-DD day; null for anything else. */
export function shanghaiDayStart(day: string): number | null {
  const m = DAY.exec(day);
  if (!m) return null;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  // Date.UTC rolls 2025-02-30 over into March: such a day does not exist.
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== day) return null;
  return (ms - OFFSET_MS) / 1000;
}

/** The `n` days ending today in Asia/Shanghai, oldest first, and the instant the first one starts. */
export function lastShanghaiDays(n: number, now = new Date()): { days: string[]; since: Date } {
  const today = shanghaiDayStart(shanghaiDay(now)) as number;
  const days: string[] = [];
  for (let i = n - 1; i >= 0; i--) days.push(shanghaiDay(new Date((today - i * 86400) * 1000)));
  return { days, since: new Date((today - (n - 1) * 86400) * 1000) };
}
