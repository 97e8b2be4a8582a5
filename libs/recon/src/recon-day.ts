/** China keeps UTC+8 without daylight saving: a fixed offset is exact. */
const OFFSET_MS = 8 * 3600_000;

/** The instants [from, to) of a YYYY-MM-DD day in Asia/Shanghai; null when the text is no such day. */
export function shanghaiDayBounds(day: string): { from: Date; to: Date } | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!m) return null;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== day) return null;
  return { from: new Date(ms - OFFSET_MS), to: new Date(ms - OFFSET_MS + 86_400_000) };
}

/** YYYY-MM-DD in Asia/Shanghai of an instant. */
export function shanghaiDate(at: Date): string {
  return new Date(at.getTime() + OFFSET_MS).toISOString().slice(0, 10);
}

/** The Asia/Shanghai day before the one `at` falls in: what the daily run reconciles. */
export function previousShanghaiDate(at: Date): string {
  return shanghaiDate(new Date(at.getTime() - 86_400_000));
}
