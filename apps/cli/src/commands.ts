import type { INestApplicationContext } from '@nestjs/common';
import {
  CallbackOperationsService,
  ChannelSetupService,
  KeyResealService,
  MerchantAccountService,
  MerchantLedgerService,
  OperatorInputError,
  OrderInspectionService,
  PortalAccessService,
  WorkerControlService,
} from '@app/operator';

/** A mistake in an operator's command line: printed as one line, exit code 2. */
export class UsageError extends Error {}

type Flags = Record<string, string | undefined>;
type Command = (flags: Flags, app: INestApplicationContext) => Promise<object>;

function required(flags: Flags, name: string): string {
  const value = flags[name];
  if (value === undefined || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

function id(flags: Flags, name: string): number {
  const value = required(flags, name);
  if (!/^\d{1,9}$/.test(value) || Number(value) < 1) throw new UsageError(`--${name} must be a positive integer id`);
  return Number(value);
}

export interface CliCommand {
  usage: string;
  flags: string[];
  run: Command;
  /** The flag of each operator parameter whose name is not its flag's in kebab-case (notifyUrl: --notify-url). */
  flagOf?: Record<string, string>;
  /** The flag a bare first argument stands for (`order:show ORDER_NO` is `order:show --order ORDER_NO`). */
  positional?: string;
  /** It acts on the job queues: the context connects to them (Redis, or the embedded PostgreSQL backend). */
  queues?: boolean;
}

/** Every operator command, by the exact names operators and scripts depend on (RUNBOOK.md names them too). */
export const COMMANDS: Record<string, CliCommand> = {
  'merchant:create': {
    usage: '--name N [--mode live|test] [--notify-url URL] [--deposit-rate R]',
    flags: ['name', 'mode', 'notify-url', 'deposit-rate'],
    run: (f, app) =>
      app.get(MerchantAccountService).create({ name: required(f, 'name'), mode: f.mode, notifyUrl: f['notify-url'], depositRate: f['deposit-rate'] }),
  },
  'merchant:disable': {
    usage: '--merchant ID',
    flags: ['merchant'],
    run: (f, app) => app.get(MerchantAccountService).setStatus(id(f, 'merchant'), 'disabled'),
  },
  'merchant:enable': { usage: '--merchant ID', flags: ['merchant'], run: (f, app) => app.get(MerchantAccountService).setStatus(id(f, 'merchant'), 'active') },
  'merchant:set-notify-url': {
    usage: '--merchant ID --url URL',
    flags: ['merchant', 'url'],
    run: (f, app) => app.get(MerchantAccountService).setNotifyUrl(id(f, 'merchant'), required(f, 'url')),
    flagOf: { notifyUrl: 'url' },
  },
  'merchant:set-deposit-rate': {
    usage: '--merchant ID --rate R',
    flags: ['merchant', 'rate'],
    run: (f, app) => app.get(MerchantAccountService).setDepositRate(id(f, 'merchant'), required(f, 'rate')),
    flagOf: { depositRate: 'rate' },
  },
  'merchant:rotate-secret': {
    usage: '--merchant ID [--grace DURATION (default 24h; 0 revokes the previous secret at once)]',
    flags: ['merchant', 'grace'],
    run: (f, app) => app.get(MerchantAccountService).rotateSecret(id(f, 'merchant'), f.grace),
  },
  'merchant:balance': { usage: '--merchant ID', flags: ['merchant'], run: (f, app) => app.get(MerchantLedgerService).balance(id(f, 'merchant')) },
  'merchant:ledger': {
    usage: '--merchant ID [--limit N]',
    flags: ['merchant', 'limit'],
    run: (f, app) => app.get(MerchantLedgerService).entries(id(f, 'merchant'), f.limit),
  },
  'merchant:user:invite': {
    usage: '--merchant ID --email E',
    flags: ['merchant', 'email'],
    run: (f, app) => app.get(PortalAccessService).invite(id(f, 'merchant'), required(f, 'email')),
  },
  'merchant:user:disable': { usage: '--email E', flags: ['email'], run: (f, app) => app.get(PortalAccessService).disable(required(f, 'email')) },
  'callback:list': {
    usage: "--order ORDER_NO | --merchant ID [--status pending|succeeded|failed|no_address] [--since UNIX] (a merchant's latest 200, newest first)",
    flags: ['order', 'merchant', 'status', 'since'],
    run: (f, app) => {
      if (f.order !== undefined && f.merchant === undefined && f.status === undefined && f.since === undefined)
        return app.get(CallbackOperationsService).listForOrder(required(f, 'order'));
      if (f.order !== undefined) throw new UsageError("--order lists one order's deliveries: give it alone, or --merchant with --status and --since");
      if (f.merchant === undefined) throw new UsageError('--order or --merchant is required');
      return app.get(CallbackOperationsService).listForMerchant(id(f, 'merchant'), f.status, f.since);
    },
  },
  'callback:circuits': {
    usage: '(the circuits open now, per merchant and destination, with since, next probe and held deliveries)',
    flags: [],
    run: (_f, app) => app.get(CallbackOperationsService).openCircuits(),
  },
  'callback:circuit:reset': {
    usage: '--merchant ID --destination URL (closes the circuit; its held deliveries go now)',
    flags: ['merchant', 'destination'],
    queues: true,
    run: (f, app) => app.get(CallbackOperationsService).resetCircuit(id(f, 'merchant'), required(f, 'destination')),
  },
  'order:show': {
    usage: 'ORDER_NO (the order, its events, refunds, payout, ledger lines and deliveries with attempts)',
    flags: ['order'],
    positional: 'order',
    run: (f, app) => app.get(OrderInspectionService).show(required(f, 'order')),
  },
  'order:stuck': {
    usage: '[--older-than 15m] (orders paid or confirmed, refunds processing, payouts unsettled for longer)',
    flags: ['older-than'],
    run: (f, app) => app.get(OrderInspectionService).stuck(f['older-than']),
  },
  'worker:pause': {
    usage: '(every worker stops taking jobs, jobs in flight finish; the processes keep running)',
    flags: [],
    queues: true,
    run: (_f, app) => app.get(WorkerControlService).pause(),
  },
  'worker:status': {
    usage: '(whether workers take jobs, per queue, and the jobs waiting, active and delayed; changes nothing)',
    flags: [],
    queues: true,
    run: (_f, app) => app.get(WorkerControlService).state(),
  },
  'worker:resume': {
    usage: '(every worker takes jobs again)',
    flags: [],
    queues: true,
    run: (_f, app) => app.get(WorkerControlService).resume(),
  },
  'keys:reseal': {
    usage: '(with MASTER_KEYS=new,old: seals every secret and channel config again under the new key)',
    flags: [],
    run: (_f, app) => app.get(KeyResealService).reseal(),
  },
  'callback:recover': {
    usage: '--merchant ID --since UNIX [--until UNIX] (failed deliveries of the last 7 days at most)',
    flags: ['merchant', 'since', 'until'],
    run: (f, app) => app.get(CallbackOperationsService).recover(id(f, 'merchant'), required(f, 'since'), f.until),
  },
  'channel:create': {
    usage:
      '--category processor|remotepay|warehouse --name N --pay-method alipay,wxpay,bank --adapter sandbox|epay|alipay|wechatpay [--mode live|test] [--rate R] [--min YUAN] [--max YUAN] [--config JSON]',
    flags: ['category', 'name', 'pay-method', 'adapter', 'mode', 'rate', 'min', 'max', 'config'],
    run: (f, app) =>
      app.get(ChannelSetupService).create({
        category: required(f, 'category'),
        name: required(f, 'name'),
        payMethod: required(f, 'pay-method'),
        adapter: required(f, 'adapter'),
        rate: f.rate,
        min: f.min,
        max: f.max,
        config: f.config,
        mode: f.mode,
      }),
  },
  'channel:enable': { usage: '--channel ID', flags: ['channel'], run: (f, app) => app.get(ChannelSetupService).setEnabled(id(f, 'channel'), true) },
  'channel:disable': { usage: '--channel ID', flags: ['channel'], run: (f, app) => app.get(ChannelSetupService).setEnabled(id(f, 'channel'), false) },
  'channel:link': {
    usage: '--merchant ID --channel ID [--rate R]',
    flags: ['merchant', 'channel', 'rate'],
    run: (f, app) => app.get(ChannelSetupService).link(id(f, 'merchant'), id(f, 'channel'), f.rate),
  },
};

/** The operator's refusal of an input, worded with the command's flag: `--notify-url must be an http or https URL`. */
export function inCliWords(command: CliCommand, err: OperatorInputError): UsageError {
  const flag = (field: string) => `--${command.flagOf?.[field] ?? field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  return new UsageError(`${flag(err.field)} ${err.reason.replace(/`(\w+)`/g, (_, field: string) => flag(field))}`);
}

/** `--name x --rate=0.1` -> { name: "x", rate: "0.1" }; unknown or repeated flags are usage errors. */
export function parseFlags(args: string[], allowed: string[], positional?: string): Flags {
  if (positional && args.length > 0 && !args[0].startsWith('--')) args = [`--${positional}`, ...args];
  const flags: Flags = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith('--')) throw new UsageError(`unexpected argument "${arg}"`);
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(2, eq) : arg.slice(2);
    const value = eq > 0 ? arg.slice(eq + 1) : args[++i];
    if (!allowed.includes(name)) throw new UsageError(`unknown option --${name}`);
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    if (name in flags) throw new UsageError(`--${name} given twice`);
    flags[name] = value;
  }
  return flags;
}
