import * as iconv from 'iconv-lite';
import { type BillLine, BillRefusedError } from '../bill-line';
import { csvFields, yuanToFen } from './csv-fields';
import { inflateZipEntry, zipEntries } from './inflate-bill';

/** The columns of the trade bill's detail file (业务明细) this reads, by their header names. */
const COLUMNS = {
  tradeNo: '支付宝交易号',
  orderNo: '商户订单号',
  type: '业务类型',
  amount: '订单金额（元）',
  received: '商家实收（元）',
  refundNo: '退款批次号/请求号',
  fee: '服务费（元）',
} as const;

const LIST_END = /^#-+业务明细列表结束-+$/;
const TRADE_TOTAL = /^#交易合计：(\d+)笔，商家实收共(-?[\d.]+)元/;
const REFUND_TOTAL = /^#退款合计：(\d+)笔，商家实收退款共(-?[\d.]+)元/;

/** GBK text of a file, refused when its bytes are not GBK (iconv-lite marks those with U+FFFD). */
function decodeGbk(bytes: Uint8Array, what: string): string {
  const text = iconv.decode(Buffer.from(bytes), 'gbk');
  if (text.includes('\uFFFD')) throw new BillRefusedError(`${what} is not GBK text`);
  return text;
}

/**
 * The detail file of the zip (…_业务明细.csv, not …_业务明细(汇总).csv), inflated alone and under the
 * cap (SPEC 6): nothing else in the zip is inflated. Alipay's names are GBK without the zip's
 * UTF-8 flag; a flagged name is read as UTF-8.
 */
async function detailFile(raw: Buffer): Promise<Buffer> {
  const entries = zipEntries(raw, 'the alipay bill');
  const detail = entries.find((e) => /业务明细\.csv$/.test(iconv.decode(e.nameBytes, e.flags & 0x800 ? 'utf8' : 'gbk')));
  if (!detail) throw new BillRefusedError('the alipay bill zip has no 业务明细.csv');
  return inflateZipEntry(raw, detail, "the alipay bill's 业务明细.csv");
}

/**
 * Reads alipay's trade bill (alipay.data.dataservice.bill.downloadurl.query, bill_type=trade): a
 * zip whose 业务明细.csv is GBK text with '#' comment lines around a header and the detail lines
 * (fields padded with tabs), then the list's end line and the 交易合计 / 退款合计 summary lines.
 * The summary must agree with the lines (count and 商家实收 total of each): a truncated file is
 * refused, as is one that is not GBK or lacks a column.
 */
export async function parseAlipayBill(raw: Buffer): Promise<BillLine[]> {
  return readAlipayDetail(await detailFile(raw));
}

/** The detail file's lines, checked against its summary. */
function readAlipayDetail(detail: Buffer): BillLine[] {
  const text = decodeGbk(detail, 'the alipay bill');
  const rows = text.split(/\r?\n/);
  const headerAt = rows.findIndex((r) => r.startsWith(COLUMNS.tradeNo));
  if (headerAt < 0) throw new BillRefusedError('the alipay bill has no header line (支付宝交易号...): not an alipay trade bill, or not GBK');
  const header = csvFields(rows[headerAt]).map((h) => h.trim());
  const index = Object.fromEntries(Object.entries(COLUMNS).map(([k, name]) => [k, header.indexOf(name)])) as Record<keyof typeof COLUMNS, number>;
  const missing = Object.entries(index)
    .filter(([, i]) => i < 0)
    .map(([k]) => COLUMNS[k as keyof typeof COLUMNS]);
  if (missing.length > 0) throw new BillRefusedError(`the alipay bill lacks the column(s) ${missing.join(', ')}`);

  const lines: BillLine[] = [];
  const sums = { pay: { n: 0, fen: 0 }, refund: { n: 0, fen: 0 } };
  let endAt = -1;
  for (let i = headerAt + 1; i < rows.length; i++) {
    const row = rows[i];
    if (LIST_END.test(row.trim())) {
      endAt = i;
      break;
    }
    if (row.trim() === '') continue;
    const f = csvFields(row).map((v) => v.trim());
    const type = f[index.type];
    const received = yuanToFen(f[index.received] ?? '');
    const amount = yuanToFen(f[index.amount] ?? '');
    const fee = yuanToFen(f[index.fee] ?? '');
    if (f.length !== header.length || (type !== '交易' && type !== '退款') || received === null || amount === null || fee === null || !f[index.orderNo]) {
      throw new BillRefusedError(`the alipay bill's line ${i + 1} is malformed`);
    }
    const kind = type === '交易' ? ('pay' as const) : ('refund' as const);
    if (kind === 'refund' && !f[index.refundNo]) throw new BillRefusedError(`the alipay bill's line ${i + 1} is a refund without its request number`);
    sums[kind].n++;
    sums[kind].fen += received;
    lines.push({
      lineNo: i + 1,
      text: row,
      kind,
      channelTradeNo: f[index.tradeNo] || null,
      orderNo: f[index.orderNo],
      refundNo: kind === 'refund' ? f[index.refundNo] : null,
      // A payment is its order amount; a refund, what went back (商家实收 is negative on its line).
      amountFen: kind === 'pay' ? amount : Math.abs(received),
      // alipay writes the fee it takes as negative; we keep fees as what the channel charged.
      feeFen: 0 - fee,
      succeeded: true,
    });
  }
  if (endAt < 0) throw new BillRefusedError('the alipay bill has no end of its list: truncated');
  const trades = rows
    .slice(endAt + 1)
    .map((r) => TRADE_TOTAL.exec(r.trim()))
    .find(Boolean);
  const refunds = rows
    .slice(endAt + 1)
    .map((r) => REFUND_TOTAL.exec(r.trim()))
    .find(Boolean);
  if (!trades || !refunds) throw new BillRefusedError('the alipay bill has no 交易合计/退款合计 summary: truncated');
  if (
    Number(trades[1]) !== sums.pay.n ||
    yuanToFen(trades[2]) !== sums.pay.fen ||
    Number(refunds[1]) !== sums.refund.n ||
    yuanToFen(refunds[2]) !== sums.refund.fen
  ) {
    throw new BillRefusedError(`the alipay bill's summary disagrees with its lines (${sums.pay.n} trades, ${sums.refund.n} refunds)`);
  }
  return lines;
}
