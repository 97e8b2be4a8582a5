import { hostname, userInfo } from 'node:os';
import type { INestApplicationContext } from '@nestjs/common';
import { OperatorActionRepository, type OperatorActionRecord } from '@app/db';

/** Options whose value is or holds a secret (a channel's keys): the trail says they were given, never what. */
const SECRET_OPTIONS = new Set(['config']);

/** Who runs the CLI: OPERATOR (a person's name, for shared accounts and containers) or the system user, at this host. */
export function operatorIdentity(env: Record<string, string | undefined>): string {
  let user = env.OPERATOR?.trim();
  if (!user) {
    try {
      user = userInfo().username;
    } catch {
      user = 'unknown';
    }
  }
  return `${user}@${hostname()}`;
}

/**
 * The operator CLI's audit trail: each command that reached the database appends who ran it,
 * with which options (secrets left out), when and how it ended, to the table operator_actions,
 * and says the same in one JSON log line on stderr (stdout keeps the command's one JSON answer).
 */
export class AuditTrail {
  private readonly lines: string[] = [];

  constructor(
    private readonly actor: string,
    private readonly logLevel: string | undefined,
  ) {}

  async record(
    app: INestApplicationContext,
    command: string,
    flags: Record<string, string | undefined>,
    outcome: OperatorActionRecord['outcome'],
    error: string | null,
  ): Promise<void> {
    const options = Object.fromEntries(
      Object.entries(flags)
        .filter((entry): entry is [string, string] => entry[1] !== undefined)
        .map(([name, value]) => [name, SECRET_OPTIONS.has(name) ? '[redacted]' : value]),
    );
    const action = { actor: this.actor, command, options, outcome, error };
    let at: Date | null = null;
    let stored = true;
    try {
      at = await app.get(OperatorActionRepository).record(action);
    } catch {
      // The database went away under the command: the log line still says what ran.
      stored = false;
    }
    if (['info', 'debug', 'trace', undefined, ''].includes(this.logLevel)) {
      const line = {
        level: outcome === 'ok' ? 30 : 40,
        time: (at ?? new Date()).getTime(),
        pid: process.pid,
        context: 'OperatorAudit',
        ...action,
        stored,
        msg: 'operator action',
      };
      this.lines.push(JSON.stringify(line));
    }
  }

  /** The lines to write once the command's own output and messages are out. */
  flush(write: (text: string) => void): void {
    for (const line of this.lines.splice(0)) write(`${line}\n`);
  }
}
