import type { BillFormat } from '@app/channels';
import { type BillLine, BillRefusedError } from '../bill-line';
import { parseAlipayBill } from './alipay-bill.parser';
import { parseEpayBill } from './epay-bill.parser';
import { parseSandboxBill } from './sandbox-bill.parser';
import { type BillDigest, parseWechatpayBill } from './wechatpay-bill.parser';

const PARSERS: Record<BillFormat, (raw: Buffer, digest: BillDigest | null) => BillLine[] | Promise<BillLine[]>> = {
  sandbox: parseSandboxBill,
  epay: parseEpayBill,
  alipay: parseAlipayBill,
  wechatpay: parseWechatpayBill,
};

export const BILL_FORMATS = Object.keys(PARSERS) as BillFormat[];

/** Every line of a bill, or a BillRefusedError naming what is wrong (past SPEC 6's inflate cap too): never a part of it. */
export async function parseBill(format: BillFormat, raw: Buffer, digest: BillDigest | null = null): Promise<BillLine[]> {
  const parser = PARSERS[format];
  if (!parser) throw new BillRefusedError(`no parser for the bill format "${format}"`);
  if (raw.length === 0) throw new BillRefusedError('the bill is empty');
  return parser(raw, digest);
}
