import { constants, crc32, deflateRawSync } from 'node:zlib';
import * as iconv from 'iconv-lite';

/** One line of alipay's 业务明细: a payment (交易) or a refund (退款), amounts as alipay prints them (yuan text). */
export interface AlipayBillRow {
  tradeNo: string;
  orderNo: string;
  type: '交易' | '退款';
  subject: string;
  /** 订单金额（元）: the order's amount (on a refund line too). */
  amount: string;
  /** 商家实收（元）: what the merchant received; negative on a refund line. */
  received: string;
  /** 退款批次号/请求号: our refund_no (out_request_no) on a refund line. */
  refundNo?: string;
  /** 服务费（元）: negative when alipay takes it, positive when it gives it back. */
  fee: string;
  time: string;
  counterparty?: string;
}

const HEADER = [
  '支付宝交易号',
  '商户订单号',
  '业务类型',
  '商品名称',
  '创建时间',
  '完成时间',
  '门店编号',
  '门店名称',
  '操作员',
  '终端号',
  '对方账户',
  '订单金额（元）',
  '商家实收（元）',
  '支付宝红包（元）',
  '集分宝（元）',
  '支付宝优惠（元）',
  '商家优惠（元）',
  '券核销金额（元）',
  '券名称',
  '商家红包消费金额（元）',
  '卡消费金额（元）',
  '退款批次号/请求号',
  '服务费（元）',
  '分润（元）',
  '备注',
];

function fen(text: string): number {
  const [whole, part = ''] = text.replace('-', '').split('.');
  return (text.startsWith('-') ? -1 : 1) * (Number(whole) * 100 + Number(part.padEnd(2, '0')));
}

function yuan(f: number): string {
  return `${f < 0 ? '-' : ''}${Math.floor(Math.abs(f) / 100)}.${String(Math.abs(f) % 100).padStart(2, '0')}`;
}

export interface AlipayBillOptions {
  account?: string;
  /** YYYY-MM-DD */
  date: string;
  /** Cut the detail file after this many lines of it (a truncated download). */
  truncateAfterLines?: number;
  /** 'utf8' writes the detail file in the wrong encoding. */
  encoding?: 'gbk' | 'utf8';
  /** Replaces one file by a deflate bomb inflating to this many MiB (the file's name and place kept). */
  bomb?: { file: 'detail' | 'summary'; mib: number };
}

/** Raw deflate data inflating to `mib` MiB of spaces from about a KiB each: full-flushed (independent) blocks, then an empty final block. */
export function deflateBomb(mib: number): Buffer {
  const block = deflateRawSync(Buffer.alloc(1 << 20, 0x20), { finishFlush: constants.Z_FULL_FLUSH });
  return Buffer.concat([...Array<Buffer>(mib).fill(block), Buffer.from([0x03, 0x00])]);
}

interface ZipFile {
  /** The name's bytes as written (alipay's: GBK, without the UTF-8 flag). */
  name: Buffer;
  /** Deflated data and the size and CRC of what it inflates to. */
  deflated: Buffer;
  size: number;
  crc: number;
}

/**
 * A zip as alipay's bill files are (APPNOTE 4.3): deflated entries whose names are GBK bytes with
 * bit 11 (UTF-8) clear, a central directory, its end record. Written here because zip writers
 * (fflate's included) name files in UTF-8.
 */
function zipOf(files: ZipFile[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const f of files) {
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0, 6);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(f.crc, 14);
    local.writeUInt32LE(f.deflated.length, 18);
    local.writeUInt32LE(f.size, 22);
    local.writeUInt16LE(f.name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0, 8);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(f.crc, 16);
    central.writeUInt32LE(f.deflated.length, 20);
    central.writeUInt32LE(f.size, 24);
    central.writeUInt16LE(f.name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, f.name, f.deflated);
    centrals.push(central, f.name);
    offset += 30 + f.name.length + f.deflated.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

function zipFile(name: string, data: Buffer): ZipFile {
  return { name: iconv.encode(name, 'gbk'), deflated: deflateRawSync(data), size: data.length, crc: crc32(data) };
}

function bombFile(name: string, mib: number): ZipFile {
  // It declares what it inflates to (a reader that sizes its buffer by the declaration allocates all of it); the CRC is not worth computing.
  return { name: iconv.encode(name, 'gbk'), deflated: deflateBomb(mib), size: mib * 1024 * 1024, crc: 0 };
}

/**
 * alipay's trade bill as alipay.data.dataservice.bill.downloadurl.query's bill_download_url
 * serves it (documented at opendocs.alipay.com, 对账单下载): a zip of two GBK CSV files, named in
 * GBK, {account}_{yyyyMMdd}_业务明细.csv and its 业务明细(汇总).csv. The detail file: '#' lines naming
 * the account and the period, the header, one line per payment or refund with each field padded
 * with a tab, the list's end line, then the 交易合计 and 退款合计 summary lines and the export time.
 */
export function alipayTradeBill(rows: AlipayBillRow[], options: AlipayBillOptions): Buffer {
  const account = options.account ?? '20881234567890120156';
  const day = options.date.replace(/-/g, '');
  const [y, m, d] = options.date.split('-');
  const trades = rows.filter((r) => r.type === '交易');
  const refunds = rows.filter((r) => r.type === '退款');
  const sum = (list: AlipayBillRow[]) => yuan(list.reduce((t, r) => t + fen(r.received), 0));
  const detail = rows.map((r) =>
    [
      r.tradeNo,
      r.orderNo,
      r.type,
      r.subject,
      r.time,
      r.time,
      '',
      '',
      '',
      '',
      r.counterparty ?? 'abc***@163.com',
      r.amount,
      r.received,
      '0.00',
      '0.00',
      '0.00',
      '0.00',
      '0.00',
      '',
      '0.00',
      '0.00',
      r.refundNo ?? '',
      r.fee,
      '0.00',
      '',
    ]
      .map((v) => `${v}\t`)
      .join(','),
  );
  let lines = [
    '#支付宝业务明细查询',
    `#账号：[${account}]`,
    `#起始日期：[${y}年${m}月${d}日 00:00:00]   终止日期：[${y}年${m}月${d}日 23:59:59]`,
    '#-----------------------------------------业务明细列表----------------------------------------',
    HEADER.join(','),
    ...detail,
    '#-----------------------------------------业务明细列表结束------------------------------------',
    `#交易合计：${trades.length}笔，商家实收共${sum(trades)}元，商家优惠共0.00元`,
    `#退款合计：${refunds.length}笔，商家实收退款共${sum(refunds)}元，商家优惠退款共0.00元`,
    `#导出时间：[${y}年${m}月${d}日 09:00:00]`,
  ];
  if (options.truncateAfterLines !== undefined) lines = lines.slice(0, options.truncateAfterLines);
  const text = lines.join('\r\n') + '\r\n';
  const summary = [
    '#支付宝业务汇总查询',
    `#账号：[${account}]`,
    '门店编号,门店名称,交易订单总笔数,退款订单总笔数,订单金额（元）,商家实收（元）',
    `,,${trades.length},${refunds.length},${sum(trades)},${sum(rows)}`,
    '',
  ].join('\r\n');
  const encode = (s: string): Buffer => (options.encoding === 'utf8' ? Buffer.from(s, 'utf8') : iconv.encode(s, 'gbk'));
  const names = { detail: `${account}_${day}_业务明细.csv`, summary: `${account}_${day}_业务明细(汇总).csv` };
  const file = (which: 'detail' | 'summary', content: string): ZipFile =>
    options.bomb?.file === which ? bombFile(names[which], options.bomb.mib) : zipFile(names[which], encode(content));
  return zipOf([file('detail', text), file('summary', summary)]);
}
