import { writeSync } from 'node:fs';

/** A start refused on purpose (wrong master key, schema behind the build): its message is the whole story. */
export class StartupRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupRefusal';
  }
}

/**
 * Nest's options for every app: bootstrap lines are held until the JSON logger is in place and
 * are never flushed to Nest's coloured console when the start fails, and a failure rejects
 * (so main prints one line) instead of Nest exiting from inside.
 */
export const NEST_START_OPTIONS = { bufferLogs: true, autoFlushLogs: false, abortOnError: false } as const;

/** The cause of a failed start in one sentence: pg's AggregateError (every address refused) has an empty message. */
export function startupCause(err: unknown): string {
  if (err instanceof StartupRefusal) return err.message;
  if (err instanceof AggregateError && err.errors.length > 0) return [...new Set(err.errors.map(startupCause))].join('; ');
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    // ioredis's Sentinel names its next retry's delay, different each time: one outage is one cause.
    const message = (err.message || code || err.name).replace(/ Retrying from scratch after \d+ms\./, '');
    // A Redis Cluster client's "Failed to refresh slots cache." keeps why in its last node's error (a refused connection, a certificate).
    const last = (err as { lastNodeError?: unknown }).lastNodeError;
    if (last) return `${message} (last node: ${startupCause(last)})`;
    return code && /^E[A-Z]+$/.test(code) && !message.includes(code) ? `${message} (${code})` : message;
  }
  return String(err);
}

/**
 * Writes one line on stdout now, whole, before the caller goes on to exit: a synchronous write
 * that waits out a full non-blocking pipe (EAGAIN) instead of leaving the line in a buffer that
 * dies with the process.
 */
export function writeLineNow(line: string): void {
  const bytes = Buffer.from(`${line}\n`);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let offset = 0; offset < bytes.length;) {
    try {
      offset += writeSync(1, bytes, offset);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}

/** One JSON line, in pino's shape, for a process that cannot start; then it exits 1. */
export function exitOnStartupFailure(context: string, err: unknown, fields: Record<string, unknown> = {}): never {
  writeLineNow(JSON.stringify({ level: 60, time: Date.now(), pid: process.pid, context, ...fields, msg: `${context} cannot start: ${startupCause(err)}` }));
  process.exit(1);
}
