import { randomInt } from 'node:crypto';

const SHANGHAI_OFFSET_MS = 8 * 3600 * 1000;

/** SPEC 5: yyyyMMddHHmmss in Asia/Shanghai (UTC+8, no daylight saving) plus 8 random digits. */
export function newOrderNo(now: Date = new Date()): string {
  const stamp = new Date(now.getTime() + SHANGHAI_OFFSET_MS).toISOString().slice(0, 19).replace(/[-T:]/g, '');
  return stamp + String(randomInt(0, 100_000_000)).padStart(8, '0');
}
