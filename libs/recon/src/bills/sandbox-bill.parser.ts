import { SANDBOX_BILL_COLUMNS } from '@app/channels';
import { type BillLine, BillRefusedError, decodeUtf8, parseSignedYuan } from '../bill-line';

/** Reads the sandbox's bill (libs/channels sandboxBillCsv): every line checked, the summary line must agree. */
export function parseSandboxBill(raw: Buffer): BillLine[] {
  const rows = decodeUtf8(raw, 'the sandbox bill')
    .split('\n')
    .map((l) => l.replace(/\r$/, ''));
  if (rows.at(-1) === '') rows.pop();
  if (!rows[0]?.startsWith('# sandbox bill,')) throw new BillRefusedError('the sandbox bill has no title line');
  if (rows[1] !== SANDBOX_BILL_COLUMNS) throw new BillRefusedError('the sandbox bill has unexpected columns');
  const summary = /^# end,lines=(\d+),net=(-?\d+\.\d{2})$/.exec(rows.at(-1) ?? '');
  if (!summary || rows.length < 3) throw new BillRefusedError('the sandbox bill has no summary line: truncated');
  const lines: BillLine[] = [];
  let net = 0;
  for (let i = 2; i < rows.length - 1; i++) {
    const text = rows[i];
    const fields = text.split(',');
    const [tradeNo, orderNo, refundNo, kind, amount, fee] = fields;
    const amountFen = parseSignedYuan(amount ?? '');
    const feeFen = parseSignedYuan(fee ?? '');
    if (fields.length !== 7 || (kind !== 'pay' && kind !== 'refund') || !/^\d{22}$/.test(orderNo) || amountFen === null || amountFen <= 0 || feeFen === null) {
      throw new BillRefusedError(`the sandbox bill's line ${i + 1} is malformed`);
    }
    if ((kind === 'refund') !== /^\d{22}$/.test(refundNo)) throw new BillRefusedError(`the sandbox bill's line ${i + 1} has a wrong refund_no`);
    net += kind === 'pay' ? amountFen : -amountFen;
    lines.push({ lineNo: i + 1, text, kind, channelTradeNo: tradeNo || null, orderNo, refundNo: refundNo || null, amountFen, feeFen, succeeded: true });
  }
  if (Number(summary[1]) !== lines.length || parseSignedYuan(summary[2]) !== net) {
    throw new BillRefusedError(`the sandbox bill's summary (${summary[1]} lines, ${summary[2]}) disagrees with its ${lines.length} lines`);
  }
  return lines;
}
