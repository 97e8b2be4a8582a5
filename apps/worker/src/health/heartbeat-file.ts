import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';

/** How often a healthy worker writes its heartbeat. */
export const HEARTBEAT_INTERVAL_MS = 5_000;
/** A heartbeat older than this, or none, is an unhealthy worker: several beats in a row were missed. */
export const HEARTBEAT_STALE_MS = 30_000;

interface Heartbeat {
  at: number;
  pid: number;
}

/** Written to a temporary name and renamed, so a reader never sees half a file. */
export function writeHeartbeat(file: string, at: number): void {
  const next = `${file}.${process.pid}`;
  writeFileSync(next, JSON.stringify({ at, pid: process.pid } satisfies Heartbeat));
  renameSync(next, file);
}

export function removeHeartbeat(file: string): void {
  rmSync(file, { force: true });
}

/** Why the worker that writes `file` is not healthy at `now`, or null when it is. */
export function heartbeatProblem(file: string, now: number): string | null {
  let beat: Partial<Heartbeat>;
  try {
    beat = JSON.parse(readFileSync(file, 'utf8')) as Partial<Heartbeat>;
  } catch {
    return `no heartbeat in ${file}: the worker is not running, still starting, or stopping`;
  }
  if (typeof beat.at !== 'number') return `unreadable heartbeat in ${file}`;
  const age = now - beat.at;
  if (age > HEARTBEAT_STALE_MS)
    return `last heartbeat ${Math.round(age / 1000)} s ago (worker pid ${beat.pid}): it stopped taking jobs or cannot reach its database or queue`;
  return null;
}
