const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "15s" -> 15000, "3m" -> 180000; null when the text is not one positive duration. */
export function parseDuration(text: string): number | null {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!m) return null;
  const ms = Number(m[1]) * UNIT_MS[m[2]];
  return Number.isSafeInteger(ms) && ms > 0 ? ms : null;
}

/** "15s,15s,30s" -> [15000, 15000, 30000]; null if any item is not a duration. */
export function parseDurationList(text: string): number[] | null {
  const items = text.split(',').map(parseDuration);
  return items.length > 0 && items.every((ms): ms is number => ms !== null) ? items : null;
}
