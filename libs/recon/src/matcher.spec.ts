import type { OurMovement } from '@app/db';
import type { BillLine } from './bill-line';
import { reconcile } from './matcher';

const line = (over: Partial<BillLine>): BillLine => ({
  lineNo: 3,
  text: 'x',
  kind: 'pay',
  channelTradeNo: 'T1',
  orderNo: '1',
  refundNo: null,
  amountFen: 1000,
  feeFen: 6,
  succeeded: true,
  ...over,
});
const ours = (over: Partial<OurMovement>): OurMovement => ({
  kind: 'pay',
  orderNo: '1',
  refundNo: null,
  amountFen: 1000,
  status: 'completed',
  moved: true,
  inDay: true,
  ...over,
});

describe('reconcile', () => {
  it('a line and our movement of one subject and amount: matched, totals equal', () => {
    const { lines, totals } = reconcile([line({})], [ours({})]);
    expect(lines.map((l) => l.class)).toEqual(['matched']);
    expect(totals).toMatchObject({ billTotalFen: 1000, ourTotalFen: 1000, feeFen: 6, differenceFen: 0 });
  });

  it('each class once', () => {
    const { lines, totals } = reconcile(
      [
        line({ orderNo: 'amount', amountFen: 1001 }),
        line({ orderNo: 'pending' }),
        line({ orderNo: 'unknown' }),
        line({ kind: 'refund', orderNo: 'r', refundNo: 'failed', amountFen: 300, feeFen: -2 }),
        line({ orderNo: 'unpaid-there', succeeded: false }),
      ],
      [
        ours({ orderNo: 'amount' }),
        ours({ orderNo: 'pending', status: 'cancelled', moved: false, inDay: false }),
        ours({ kind: 'refund', orderNo: 'r', refundNo: 'failed', amountFen: 300, status: 'failed', moved: false, inDay: false }),
        ours({ orderNo: 'unpaid-there' }),
        ours({ orderNo: 'not-on-bill', amountFen: 500 }),
        ours({ orderNo: 'other-day', inDay: false }),
      ],
    );
    expect(lines.map((l) => [l.orderNo, l.class])).toEqual([
      ['amount', 'amount_mismatch'],
      ['pending', 'missing_local'],
      ['unknown', 'missing_local'],
      ['r', 'status_mismatch'],
      ['unpaid-there', 'status_mismatch'],
      ['not-on-bill', 'missing_channel'],
    ]);
    expect(totals.counts).toEqual({ matched: 0, missing_local: 2, missing_channel: 1, amount_mismatch: 1, status_mismatch: 2 });
    // Bill: 10.01 + 10 + 10 - 3 (the unpaid line moved nothing); ours: 10 + 10 + 5 of the day.
    expect(totals).toMatchObject({ billTotalFen: 2701, ourTotalFen: 2500, differenceFen: 201, feeFen: 16 });
  });

  it('a second line about one subject is a status_mismatch, never a second match', () => {
    const { lines } = reconcile([line({}), line({ lineNo: 4 })], [ours({})]);
    expect(lines.map((l) => [l.billLineNo, l.class])).toEqual([
      [3, 'matched'],
      [4, 'status_mismatch'],
    ]);
  });

  it('an empty bill on a day we moved money: every movement missing_channel', () => {
    const { lines, totals } = reconcile([], [ours({}), ours({ kind: 'refund', refundNo: '9', amountFen: 200, status: 'succeeded' })]);
    expect(lines.map((l) => l.class)).toEqual(['missing_channel', 'missing_channel']);
    expect(totals).toMatchObject({ billTotalFen: 0, ourTotalFen: 800, differenceFen: -800 });
  });
});
