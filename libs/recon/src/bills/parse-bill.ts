import type { BillFormat } from '@app/channels';
import { type BillLine, BillRefusedError } from '../bill-line';
import { parseEpayBill } from './epay-bill.parser';
import { parseSandboxBill } from './sandbox-bill.parser';

const PARSERS: Partial<Record<BillFormat, (raw: Buffer) => BillLine[]>> = {
  sandbox: parseSandboxBill,
  epay: parseEpayBill,
};

export const BILL_FORMATS = Object.keys(PARSERS) as BillFormat[];

/** Every line of a bill, or a BillRefusedError naming what is wrong: never a part of it. */
export function parseBill(format: BillFormat, raw: Buffer): BillLine[] {
  const parser = PARSERS[format];
  if (!parser) throw new BillRefusedError(`no parser for the bill format "${format}"`);
  if (raw.length === 0) throw new BillRefusedError('the bill is empty');
  return parser(raw);
}
