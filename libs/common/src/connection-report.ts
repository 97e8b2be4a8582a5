import type { EventEmitter } from 'node:events';
import { Logger } from '@nestjs/common';
import { startupCause } from './startup';

/**
 * Says a connection's trouble once per change of state, not once per retry: a Redis that does
 * not answer makes ioredis emit 'error' on every reconnection, and an unheard 'error' is printed
 * by ioredis as a raw multi-line block. Retries themselves are debug lines.
 */
export class ConnectionReport {
  private readonly logger: Logger;
  private cause: string | null = null;

  constructor(readonly name: string) {
    this.logger = new Logger(name);
  }

  /** Listens to an ioredis client (or anything that emits 'error', 'ready' and 'reconnecting'). */
  watch(client: EventEmitter): this {
    client.on('error', (err: unknown) => this.failed(err));
    client.on('ready', () => this.answered());
    client.on('reconnecting', (delayMs: number) => this.logger.debug(`${this.name} reconnecting in ${delayMs} ms`));
    return this;
  }

  failed(err: unknown): void {
    const cause = startupCause(err);
    if (cause === this.cause) return;
    this.cause = cause;
    this.logger.error(`${this.name} does not answer: ${cause}`);
  }

  answered(): void {
    if (this.cause !== null) this.logger.log(`${this.name} answers again`);
    this.cause = null;
  }
}

/** Failures further apart than this are separate outages, each said again. */
export const OUTAGE_QUIET_MS = 60_000;

/**
 * Requests that fail because a dependency does not answer (50300): one warn line when an outage
 * starts, with its first cause, then silence while failures keep coming less than a minute
 * apart; every request still has its access line with its status.
 */
export class OutageReport {
  private readonly logger: Logger;
  private lastAt = -Infinity;

  constructor(context: string) {
    this.logger = new Logger(context);
  }

  failed(err: unknown, now = Date.now()): void {
    const starts = now - this.lastAt >= OUTAGE_QUIET_MS;
    this.lastAt = now;
    if (starts) this.logger.warn({ cause: startupCause(err) }, 'requests answer 50300: a dependency does not answer (said once per outage)');
  }
}
