import { formatYuan } from '@app/common';
import type { SandboxBillEntry } from '@app/db';

/** The header line of the sandbox bill's CSV, as its parser (libs/recon) expects it. */
export const SANDBOX_BILL_COLUMNS = 'trade_no,order_no,refund_no,kind,amount,fee,time';

function shanghaiTime(at: Date): string {
  return new Date(at.getTime() + 8 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');
}

/**
 * The sandbox's daily bill, shaped like a processor's: a title line, the column names, one line
 * per payment or refund, and a summary line with the count and the net total, so a truncated
 * file is told apart from a quiet day. UTF-8, yuan with two decimals.
 */
export function sandboxBillCsv(channelId: number, date: string, lines: SandboxBillEntry[]): Buffer {
  let net = 0;
  const body = lines.map((l) => {
    net += l.kind === 'pay' ? l.amountFen : -l.amountFen;
    return [l.tradeNo, l.orderNo, l.refundNo ?? '', l.kind, formatYuan(l.amountFen), formatYuan(l.feeFen), shanghaiTime(l.occurredAt)].join(',');
  });
  const summary = `# end,lines=${lines.length},net=${net < 0 ? '-' : ''}${formatYuan(Math.abs(net))}`;
  return Buffer.from([`# sandbox bill,channel=${channelId},date=${date}`, SANDBOX_BILL_COLUMNS, ...body, summary, ''].join('\n'), 'utf8');
}
