import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';

/** gzip members inflating to `mib` MiB of spaces from about a KiB each: concatenated members inflate as one stream. */
export function gzipBomb(mib: number): Buffer {
  return Buffer.concat(Array<Buffer>(mib).fill(gzipSync(Buffer.alloc(1 << 20, 0x20))));
}

/** One line of WeChat Pay's ALL trade bill: a payment, or a refund of one. */
export interface WechatpayBillRow {
  time: string;
  transactionId: string;
  orderNo: string;
  /** 交易状态: SUCCESS for a payment, REFUND for a refund line (REVOKED... for the others). */
  state: 'SUCCESS' | 'REFUND' | 'REVOKED';
  /** 应结订单金额 (yuan text); 0.00 on a refund line. */
  settled: string;
  refundId?: string;
  /** 商户退款单号: our refund_no. */
  refundNo?: string;
  /** 退款金额 (yuan text). */
  refundAmount?: string;
  refundState?: 'SUCCESS' | 'PROCESSING' | 'CHANGE' | 'REFUNDCLOSE';
  subject: string;
  /** 手续费, five decimals as WeChat prints it; negative on a refund line. */
  fee: string;
  /** 订单金额 */
  total: string;
}

const HEADER =
  '交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注';
const SUMMARY = '总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额';

function micro(text: string): number {
  const [whole, part = ''] = text.replace('-', '').split('.');
  return (text.startsWith('-') ? -1 : 1) * (Number(whole) * 100_000 + Number(part.padEnd(5, '0')));
}

function decimals(units: number, places: number): string {
  const scale = 10 ** (5 - places);
  const v = Math.round(units / scale);
  const base = 10 ** places;
  return `${v < 0 ? '-' : ''}${Math.floor(Math.abs(v) / base)}.${String(Math.abs(v) % base).padStart(places, '0')}`;
}

export interface WechatpayBillOptions {
  mchid?: string;
  appid?: string;
  gzip?: boolean;
  /** Cut the bill after this many lines (a truncated download). */
  truncateAfterLines?: number;
  /** WeChat writes its bills with a UTF-8 BOM (wechatpay-axios-plugin's castCsvBill drops its 3 bytes); false: without. */
  bom?: boolean;
}

/**
 * WeChat Pay's trade bill as GET /v3/bill/tradebill (bill_type=ALL) points to it (documented at
 * pay.weixin.qq.com, 申请交易账单 / 下载账单): UTF-8 CSV after a BOM, the header, one line per payment or
 * refund with every field prefixed by a backtick, then the 总交易单数 summary header and its
 * line. `hashValue` is the SHA1 of the uncompressed bill, as the API answers it; `raw` is gzipped
 * when tar_type=GZIP was asked for.
 */
export function wechatpayTradeBill(rows: WechatpayBillRow[], options: WechatpayBillOptions = {}): { raw: Buffer; hashType: 'SHA1'; hashValue: string } {
  const mchid = options.mchid ?? '1900000001';
  const appid = options.appid ?? 'wx8888888888888888';
  const detail = rows.map((r) =>
    [
      r.time,
      appid,
      mchid,
      '0',
      '',
      r.transactionId,
      r.orderNo,
      'oUpF8uMuAJO_M2pxb1Q9zNjWeS6o',
      'NATIVE',
      r.state,
      'OTHERS',
      'CNY',
      r.settled,
      '0.00',
      r.refundId ?? '0',
      r.refundNo ?? '0',
      r.refundAmount ?? '0.00',
      '0.00',
      r.refundNo ? 'ORIGINAL' : '',
      r.refundState ?? '',
      r.subject,
      '',
      r.fee,
      '0.60%',
      r.total,
      r.refundAmount ?? '0.00',
      '',
    ]
      .map((v) => `\`${v}`)
      .join(','),
  );
  const sum = (pick: (r: WechatpayBillRow) => string, places: number) =>
    decimals(
      rows.reduce((t, r) => t + micro(pick(r)), 0),
      places,
    );
  const summary = [
    rows.length,
    sum((r) => r.settled, 2),
    sum((r) => r.refundAmount ?? '0', 2),
    '0.00',
    sum((r) => r.fee, 5),
    sum((r) => r.total, 2),
    sum((r) => r.refundAmount ?? '0', 2),
  ]
    .map((v) => `\`${v}`)
    .join(',');
  let lines = [HEADER, ...detail, SUMMARY, summary];
  if (options.truncateAfterLines !== undefined) lines = lines.slice(0, options.truncateAfterLines);
  const bill = Buffer.from(`${options.bom === false ? '' : '\uFEFF'}${lines.join('\r\n')}\r\n`, 'utf8');
  return { raw: options.gzip ? gzipSync(bill) : bill, hashType: 'SHA1', hashValue: createHash('sha1').update(bill).digest('hex') };
}
