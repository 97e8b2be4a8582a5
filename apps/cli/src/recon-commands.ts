import { readFileSync } from 'node:fs';
import { type DynamicModule, Module } from '@nestjs/common';
import { type AppConfig, CommonModule } from '@app/common';
import type { BillFormat } from '@app/channels';
import { DbModule } from '@app/db';
import { QueueModule } from '@app/queue';
import { BILL_FORMATS, ReconModule, type ReconService } from '@app/recon';
import { UsageError } from './commands';

type Flags = Record<string, string | undefined>;

/** What recon:run and recon:show need: the order lifecycle (a picked-up payment enqueues its confirmation) and the channels. */
@Module({})
export class ReconCliModule {
  static forRoot(config: AppConfig): DynamicModule {
    return { module: ReconCliModule, imports: [CommonModule.forRoot(config), DbModule.forRoot(2), QueueModule.forRoot(config), ReconModule] };
  }
}

function channelId(value: string | undefined): number {
  if (!value || !/^\d{1,9}$/.test(value) || Number(value) < 1) throw new UsageError('--channel must be a positive integer id');
  return Number(value);
}

function date(value: string | undefined): string {
  if (!value) throw new UsageError('--date YYYY-MM-DD is required');
  return value;
}

/** A bill given by hand: read whole, its format named, for a channel whose adapter cannot download one. */
function supplied(flags: Flags): { format: BillFormat; raw: Buffer; digest?: { type: string; value: string } } | null {
  if (flags.file === undefined && flags.format === undefined && flags.hash === undefined) return null;
  const format = flags.format as BillFormat;
  if (!flags.file || !BILL_FORMATS.includes(format)) throw new UsageError(`--file needs --format ${BILL_FORMATS.join('|')}`);
  // wechatpay's tradebill answer names the digest of the bill: --hash SHA1:<hash_value>.
  const hash = flags.hash === undefined ? null : /^([A-Za-z0-9]+):([0-9a-fA-F]{40,128})$/.exec(flags.hash);
  if (flags.hash !== undefined && !hash) throw new UsageError('--hash must be TYPE:HEX, e.g. SHA1:<hash_value>');
  let raw: Buffer;
  try {
    raw = readFileSync(flags.file);
  } catch {
    throw new UsageError(`--file ${flags.file} cannot be read`);
  }
  return hash ? { format, raw, digest: { type: hash[1], value: hash[2] } } : { format, raw };
}

export const RECON_COMMANDS: Record<string, { usage: string; flags: string[]; run: (recon: ReconService, flags: Flags) => Promise<object> }> = {
  'recon:run': {
    usage: '--channel ID --date YYYY-MM-DD [--file BILL --format sandbox|epay|alipay|wechatpay [--hash SHA1:HEX]]',
    flags: ['channel', 'date', 'file', 'format', 'hash'],
    run: (recon, f) => recon.run(channelId(f.channel), date(f.date), supplied(f)),
  },
  'recon:show': {
    usage: '--date YYYY-MM-DD [--channel ID]',
    flags: ['date', 'channel'],
    run: (recon, f) => recon.show(date(f.date), f.channel === undefined ? null : channelId(f.channel)),
  },
};
