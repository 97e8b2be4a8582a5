import * as iconv from 'iconv-lite';
import { gzipSync } from 'node:zlib';
import { type AlipayBillRow, alipayTradeBill } from '../../../../test/fakes/alipay-bill';
import { type WechatpayBillRow, gzipBomb, wechatpayTradeBill } from '../../../../test/fakes/wechatpay-bill';
import { BillRefusedError } from '../bill-line';
import { parseAlipayBill } from './alipay-bill.parser';
import { zipEntries } from './inflate-bill';
import { parseBill } from './parse-bill';
import { parseWechatpayBill } from './wechatpay-bill.parser';

const ALIPAY_ROWS: AlipayBillRow[] = [
  {
    tradeNo: '2025112122001412345678901234',
    orderNo: '2025112112000012345678',
    type: '交易',
    subject: '充值-张记小卖部，上海',
    amount: '100.00',
    received: '100.00',
    fee: '-0.60',
    time: '2025-11-21 12:00:05',
  },
  {
    tradeNo: '2025112122001412345678905678',
    orderNo: '2025112112300087654321',
    type: '交易',
    subject: '会员充值',
    amount: '0.01',
    received: '0.01',
    fee: '0.00',
    time: '2025-11-21 12:30:00',
  },
  {
    tradeNo: '2025112122001412345678901234',
    orderNo: '2025112112000012345678',
    type: '退款',
    subject: '充值-张记小卖部，上海',
    amount: '100.00',
    received: '-30.50',
    refundNo: '2025112115000011112222',
    fee: '0.18',
    time: '2025-11-21 15:00:00',
  },
];

const WECHAT_ROWS: WechatpayBillRow[] = [
  {
    time: '2025-11-21 12:00:05',
    transactionId: '4200001234202511211234567890',
    orderNo: '2025112112000012345678',
    state: 'SUCCESS',
    settled: '100.00',
    subject: '充值 张记',
    fee: '0.60000',
    total: '100.00',
  },
  {
    time: '2025-11-21 13:00:00',
    transactionId: '4200001234202511211234560000',
    orderNo: '2025112113000011111111',
    state: 'SUCCESS',
    settled: '0.07',
    subject: '小额',
    fee: '0.00042',
    total: '0.07',
  },
  {
    time: '2025-11-21 15:00:00',
    transactionId: '4200001234202511211234567890',
    orderNo: '2025112112000012345678',
    state: 'REFUND',
    settled: '0.00',
    refundId: '50300001',
    refundNo: '2025112115000011112222',
    refundAmount: '30.50',
    refundState: 'SUCCESS',
    subject: '充值 张记',
    fee: '-0.18300',
    total: '0.00',
  },
];

async function refusal(work: () => Promise<unknown>): Promise<string> {
  try {
    await work();
  } catch (err) {
    if (err instanceof BillRefusedError) return err.message;
    throw err;
  }
  throw new Error('not refused');
}

describe('alipay trade bill (zip of GBK CSV)', () => {
  it('finds the detail file by its GBK name (no UTF-8 flag in the zip)', () => {
    const zip = alipayTradeBill(ALIPAY_ROWS, { date: '2025-11-21' });
    const names = zipEntries(zip, 'bill').map((e) => [e.flags & 0x800, iconv.decode(e.nameBytes, 'gbk')]);
    expect(names).toEqual([
      [0, '20881234567890120156_20251121_业务明细.csv'],
      [0, '20881234567890120156_20251121_业务明细(汇总).csv'],
    ]);
  });

  it('reads every line of a GBK bill with Chinese names: payments, a refund by its request number, fees as charged', async () => {
    const lines = await parseAlipayBill(alipayTradeBill(ALIPAY_ROWS, { date: '2025-11-21' }));
    expect(lines.map((l) => [l.kind, l.orderNo, l.refundNo, l.amountFen, l.feeFen, l.channelTradeNo])).toEqual([
      ['pay', '2025112112000012345678', null, 10000, 60, '2025112122001412345678901234'],
      ['pay', '2025112112300087654321', null, 1, 0, '2025112122001412345678905678'],
      ['refund', '2025112112000012345678', '2025112115000011112222', 3050, -18, '2025112122001412345678901234'],
    ]);
    expect(lines[0].text).toContain('充值-张记小卖部，上海');
    expect(lines[0].lineNo).toBe(6);
  });

  it('an empty day is a bill with no line', async () => {
    expect(await parseAlipayBill(alipayTradeBill([], { date: '2025-11-21' }))).toEqual([]);
  });

  it('refuses a truncated, a re-encoded, a corrupt or a tampered bill, naming why', async () => {
    expect(await refusal(() => parseAlipayBill(alipayTradeBill(ALIPAY_ROWS, { date: '2025-11-21', truncateAfterLines: 7 })))).toMatch(/truncated/);
    expect(await refusal(() => parseAlipayBill(alipayTradeBill(ALIPAY_ROWS, { date: '2025-11-21', truncateAfterLines: 9 })))).toMatch(/summary: truncated/);
    expect(await refusal(() => parseAlipayBill(alipayTradeBill(ALIPAY_ROWS, { date: '2025-11-21', encoding: 'utf8' })))).toMatch(/GBK/);
    const zip = alipayTradeBill(ALIPAY_ROWS, { date: '2025-11-21' });
    expect(await refusal(() => parseAlipayBill(zip.subarray(0, zip.length - 40)))).toMatch(/zip/);
    expect(await refusal(() => parseBill('alipay', Buffer.alloc(0)))).toMatch(/empty/);
    expect(await refusal(() => parseAlipayBill(Buffer.from(iconv.encode('支付宝交易号,商户订单号\r\n', 'gbk'))))).toMatch(/zip/);
  });
});

describe('compressed bills are inflated as a stream under 64 MiB (SPEC 6)', () => {
  it('an alipay zip: only its detail file is inflated; a detail file past the cap is refused, a bomb in the summary file never opened', async () => {
    const bomb = alipayTradeBill(ALIPAY_ROWS, { date: '2025-11-21', bomb: { file: 'detail', mib: 80 } });
    expect(bomb.length).toBeLessThan(200 * 1024);
    expect(await refusal(() => parseAlipayBill(bomb))).toMatch(/业务明细\.csv inflates past 64 MiB: refused/);
    const quiet = alipayTradeBill(ALIPAY_ROWS, { date: '2025-11-21', bomb: { file: 'summary', mib: 80 } });
    expect(await parseAlipayBill(quiet)).toHaveLength(3);
  });

  it('a wechatpay gzip past the cap is refused; several gzip members inflate as one bill', async () => {
    expect(await refusal(() => parseWechatpayBill(gzipBomb(80)))).toMatch(/inflates past 64 MiB: refused/);
    const bill = wechatpayTradeBill(WECHAT_ROWS).raw;
    const members = Buffer.concat([gzipSync(bill.subarray(0, 100)), gzipSync(bill.subarray(100))]);
    expect(await parseWechatpayBill(members)).toHaveLength(3);
  });
});

describe('wechatpay trade bill (backtick fields, summary, gzip, hash_value)', () => {
  it('reads a bill with or without the BOM WeChat writes', async () => {
    const withBom = wechatpayTradeBill(WECHAT_ROWS);
    expect(withBom.raw.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
    expect(await parseWechatpayBill(withBom.raw, { type: withBom.hashType, value: withBom.hashValue })).toHaveLength(3);
    expect(await parseWechatpayBill(wechatpayTradeBill(WECHAT_ROWS, { bom: false }).raw)).toHaveLength(3);
  });

  it('reads the ALL bill, plain and gzipped, checking hash_value on the uncompressed text; fees of 5 decimals to fen half up', async () => {
    for (const gzip of [false, true]) {
      const bill = wechatpayTradeBill(WECHAT_ROWS, { gzip });
      const lines = await parseWechatpayBill(bill.raw, { type: bill.hashType, value: bill.hashValue });
      expect(lines.map((l) => [l.kind, l.orderNo, l.refundNo, l.amountFen, l.feeFen, l.succeeded])).toEqual([
        ['pay', '2025112112000012345678', null, 10000, 60, true],
        ['pay', '2025112113000011111111', null, 7, 0, true],
        ['refund', '2025112112000012345678', '2025112115000011112222', 3050, -18, true],
      ]);
      expect(lines[0].channelTradeNo).toBe('4200001234202511211234567890');
    }
  });

  it('a refund still processing moved nothing', async () => {
    const bill = wechatpayTradeBill([WECHAT_ROWS[0], { ...WECHAT_ROWS[2], refundState: 'PROCESSING' }]);
    expect((await parseWechatpayBill(bill.raw)).map((l) => l.succeeded)).toEqual([true, false]);
  });

  it('refuses a bill whose hash_value differs, a truncated bill, a broken gzip, a wrong header', async () => {
    const bill = wechatpayTradeBill(WECHAT_ROWS);
    expect(await refusal(() => parseWechatpayBill(bill.raw, { type: 'SHA1', value: '0'.repeat(40) }))).toMatch(/hash_value/);
    expect(await refusal(() => parseWechatpayBill(wechatpayTradeBill(WECHAT_ROWS, { truncateAfterLines: 3 }).raw))).toMatch(/truncated/);
    expect(await refusal(() => parseWechatpayBill(wechatpayTradeBill(WECHAT_ROWS, { truncateAfterLines: 5 }).raw))).toMatch(/truncated/);
    const zipped = gzipSync(bill.raw);
    expect(await refusal(() => parseWechatpayBill(zipped.subarray(0, zipped.length - 10)))).toMatch(/gzip/);
    expect(await refusal(() => parseWechatpayBill(Buffer.from('a,b,c\r\n')))).toMatch(/header/);
    const edited = Buffer.from(bill.raw.toString('utf8').replace('`0.07,', '`0.08,'));
    expect(await refusal(() => parseWechatpayBill(edited))).toMatch(/summary disagrees/);
  });
});
