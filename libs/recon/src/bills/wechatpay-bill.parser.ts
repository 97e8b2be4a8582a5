import { createHash } from 'node:crypto';
import { type BillLine, BillRefusedError, decodeUtf8 } from '../bill-line';
import { csvFields, yuanToFen } from './csv-fields';
import { gunzipCapped } from './inflate-bill';

/** What the tradebill API answered beside download_url: the digest of the (uncompressed) bill. */
export interface BillDigest {
  /** `SHA1` as WeChat Pay names it today. */
  type: string;
  value: string;
}

const COLUMNS = {
  tradeNo: '微信订单号',
  orderNo: '商户订单号',
  state: '交易状态',
  settled: '应结订单金额',
  refundNo: '商户退款单号',
  refundAmount: '退款金额',
  refundState: '退款状态',
  fee: '手续费',
} as const;

const SUMMARY_HEADER = '总交易单数';

/** A field of the bill: WeChat prefixes each with a backtick so spreadsheets keep numbers as text. */
function unquote(value: string | undefined): string {
  return (value ?? '').trim().replace(/^`/, '');
}

/**
 * Reads WeChat Pay's trade bill (GET /v3/bill/tradebill, bill_type=ALL, then its download_url):
 * CSV text whose fields start with a backtick, the detail lines under their header, then the
 * 总交易单数 summary header and its line, after a UTF-8 BOM as WeChat writes it. gzip
 * (tar_type=GZIP) is recognised by its magic bytes and inflated as a stream under the cap (SPEC 6).
 * `digest` is checked on the uncompressed bill, as the API documents hash_value; the summary's
 * count, settled total and refund total must agree with the lines.
 */
export async function parseWechatpayBill(raw: Buffer, digest: BillDigest | null = null): Promise<BillLine[]> {
  const bill = raw[0] === 0x1f && raw[1] === 0x8b ? await gunzipCapped(raw, 'the wechatpay bill (gzip)') : raw;
  return readWechatpayBill(bill, digest);
}

function readWechatpayBill(bill: Buffer, digest: BillDigest | null): BillLine[] {
  if (digest) {
    if (digest.type.toUpperCase() !== 'SHA1') throw new BillRefusedError(`the wechatpay bill's hash_type ${digest.type} is not one we check`);
    const actual = createHash('sha1').update(bill).digest('hex');
    if (actual !== digest.value.toLowerCase()) throw new BillRefusedError('the wechatpay bill does not match its hash_value: corrupt or truncated');
  }
  const rows = decodeUtf8(bill, 'the wechatpay bill').split(/\r?\n/);
  if (rows.at(-1) === '') rows.pop();
  const header = csvFields(rows[0] ?? '').map((h) => h.trim());
  const index = Object.fromEntries(Object.entries(COLUMNS).map(([k, name]) => [k, header.indexOf(name)])) as Record<keyof typeof COLUMNS, number>;
  const missing = Object.entries(index)
    .filter(([, i]) => i < 0)
    .map(([k]) => COLUMNS[k as keyof typeof COLUMNS]);
  if (header[0] !== '交易时间' || missing.length > 0)
    throw new BillRefusedError(`the wechatpay bill has an unexpected header${missing.length ? ` (no ${missing.join(', ')})` : ''}`);
  const summaryAt = rows.findIndex((r) => r.startsWith(SUMMARY_HEADER));
  if (summaryAt < 0 || summaryAt + 1 >= rows.length) throw new BillRefusedError('the wechatpay bill has no summary lines: truncated');

  const lines: BillLine[] = [];
  let settledFen = 0;
  let refundedFen = 0;
  for (let i = 1; i < summaryAt; i++) {
    const f = csvFields(rows[i]).map(unquote);
    const state = f[index.state];
    const settled = yuanToFen(f[index.settled] ?? '');
    const refund = yuanToFen(f[index.refundAmount] ?? '');
    const fee = yuanToFen(f[index.fee] ?? '', 5);
    if (f.length !== header.length || !f[index.orderNo] || settled === null || refund === null || fee === null || !state) {
      throw new BillRefusedError(`the wechatpay bill's line ${i + 1} is malformed`);
    }
    settledFen += settled;
    refundedFen += refund;
    const isRefund = state === 'REFUND';
    if (isRefund && !f[index.refundNo]) throw new BillRefusedError(`the wechatpay bill's line ${i + 1} is a refund without its 商户退款单号`);
    lines.push({
      lineNo: i + 1,
      text: rows[i],
      kind: isRefund ? 'refund' : 'pay',
      channelTradeNo: f[index.tradeNo] || null,
      orderNo: f[index.orderNo],
      refundNo: isRefund ? f[index.refundNo] : null,
      amountFen: isRefund ? refund : settled,
      feeFen: fee,
      // A payment line counts when SUCCESS; a refund line when its refund state is SUCCESS (REVOKED, PROCESSING... moved nothing).
      succeeded: isRefund ? f[index.refundState] === 'SUCCESS' : state === 'SUCCESS',
    });
  }
  const sumHeader = csvFields(rows[summaryAt]).map((h) => h.trim());
  const sum = csvFields(rows[summaryAt + 1]).map(unquote);
  const count = Number(sum[sumHeader.indexOf('总交易单数')]);
  const settledTotal = yuanToFen(sum[sumHeader.indexOf('应结订单总金额')] ?? '');
  const refundTotal = yuanToFen(sum[sumHeader.indexOf('退款总金额')] ?? '');
  if (count !== lines.length || settledTotal !== settledFen || refundTotal !== refundedFen) {
    throw new BillRefusedError(`the wechatpay bill's summary disagrees with its ${lines.length} lines`);
  }
  return lines;
}
