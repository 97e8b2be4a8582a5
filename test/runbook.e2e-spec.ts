import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { COMMANDS } from '../apps/cli/src/commands';
import { RECON_COMMANDS } from '../apps/cli/src/recon-commands';

const runbook = readFileSync(join(__dirname, '..', 'RUNBOOK.md'), 'utf8');
const rules = (
  parse(readFileSync(join(__dirname, '..', 'deploy', 'prometheus-alerts.yml'), 'utf8')) as { groups: { rules: { alert: string }[] }[] }
).groups.flatMap((g) => g.rules);
/** What runCli answers besides the command tables. */
const CLI_NAMES = new Set(['migration:run', ...Object.keys(COMMANDS), ...Object.keys(RECON_COMMANDS)]);

/** Every `cli -- name` in the text, and every backticked `name:with:colons ...` that reads like a command. */
function commandsNamed(text: string): string[] {
  const named = new Set<string>();
  for (const m of text.matchAll(/cli -- ([a-z]+(?::[a-z-]+)+)/g)) named.add(m[1]);
  for (const m of text.matchAll(/`([a-z]+(?::[a-z-]+)+)(?:[ `])/g)) named.add(m[1]);
  return [...named];
}

describe('RUNBOOK.md', () => {
  it('names only commands the CLI has', () => {
    const named = commandsNamed(runbook);
    // The extraction itself works: the tools the runbook is built on are found.
    expect(named).toEqual(
      expect.arrayContaining(['callback:circuits', 'callback:circuit:reset', 'order:show', 'order:stuck', 'worker:pause', 'worker:resume', 'callback:list']),
    );
    expect(named.filter((name) => !CLI_NAMES.has(name))).toEqual([]);
    expect(commandsNamed('run `npm run --silent cli -- callback:unpause`')).toEqual(['callback:unpause']);
  });

  it('covers every alert, the backups and the master key kept apart from them', () => {
    for (const alert of [
      'API down',
      'Worker down',
      'Redis down',
      'Callback delivery lag',
      'Callback failure rate',
      'Callback circuits open',
      'Database pool saturation',
      'Event loop lag',
      'Reconciliation mismatches',
      'Database down',
      'Stuck money',
      'HTTP errors',
      'HTTP latency',
      'Jobs failing',
      'Queue paused',
    ]) {
      expect(runbook).toMatch(new RegExp(`^### ${alert}$`, 'm'));
    }
    const sections = runbook.split(/^### /m).slice(1);
    for (const section of sections.filter((s) => !s.startsWith('Backups'))) {
      expect([section.split('\n')[0], /\*\*Means:\*\*/.test(section), /\*\*Why:\*\*/.test(section), /\*\*Repair:\*\*/.test(section)]).toEqual([
        section.split('\n')[0],
        true,
        true,
        true,
      ]);
    }
    // One section per rule of the sample alerts: a rule added without its section fails here.
    const alertSections = runbook
      .split(/^## /m)
      .find((part) => part.startsWith('Alerts\n'))!
      .split(/^### /m)
      .slice(1);
    expect(alertSections).toHaveLength(rules.length);
    expect(runbook).toMatch(/^## Backups$/m);
    expect(runbook).toMatch(/master key is backed up apart from the database/i);
  });
});
