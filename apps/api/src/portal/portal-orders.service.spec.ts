import type { Payout, Refund, RefundStatus } from '@app/db';
import { portalPayout, refundSummary } from './portal-orders.service';

const refund = (refundFen: number, status: RefundStatus): Refund =>
  ({ refundNo: `R${refundFen}`, merchantRefundNo: `m${refundFen}`, refundFen, status, reason: null, createdAt: new Date(0), updatedAt: new Date(0) }) as Refund;

describe("the order page's money out", () => {
  // What is still refundable is the refund lifecycle's figure (portal-money e2e: "Still refundable").
  it('adds up succeeded and processing refunds, never failed ones', () => {
    const summary = refundSummary([refund(1_000, 'succeeded'), refund(2_000, 'failed'), refund(500, 'processing')], 8_500);
    expect([summary.succeededFen, summary.processingFen, summary.refundableFen]).toEqual([1_000, 500, 8_500]);
    expect(refundSummary([], 10_000)).toMatchObject({ succeededFen: 0, processingFen: 0, list: [] });
  });

  it("gives the page a payee with the masked account only, and the payout state from the order's", () => {
    const payout = { orderId: '1', payeeName: '张三', payeeBank: '中国工商银行', payeeAccountEnc: 'sealed', payeeAccountMasked: '6222********1234' } as Payout;
    const shown = portalPayout({ status: 'paid' }, payout);
    expect(shown).toEqual({ payeeName: '张三', payeeBank: '中国工商银行', payeeAccountMasked: '6222********1234', state: 'paid_out' });
    expect(JSON.stringify(shown)).not.toContain('sealed');
    expect(portalPayout({ status: 'pending' }, payout).state).toBe('processing');
    expect(portalPayout({ status: 'completed' }, payout).state).toBe('paid_out');
    expect(portalPayout({ status: 'cancelled' }, payout).state).toBe('refused');
  });
});
