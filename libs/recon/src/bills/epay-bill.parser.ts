import { type BillLine, BillRefusedError, decodeUtf8 } from '../bill-line';

interface EpayAnswer {
  kind: unknown;
  order_no: unknown;
  refund_no: unknown;
  state: unknown;
  amount_fen: unknown;
  trade_no: unknown;
}

/** Reads the day's epay answers (EpayAdapter.bills): a paid order or a succeeded refund moved money, any other answer nothing. */
export function parseEpayBill(raw: Buffer): BillLine[] {
  let doc: { format?: unknown; answers?: unknown };
  try {
    doc = JSON.parse(decodeUtf8(raw, 'the epay answers')) as typeof doc;
  } catch (err) {
    if (err instanceof BillRefusedError) throw err;
    throw new BillRefusedError('the epay answers are not JSON: truncated or corrupt');
  }
  if (doc?.format !== 'epay-order-queries' || !Array.isArray(doc.answers)) throw new BillRefusedError('the epay answers have an unexpected shape');
  return (doc.answers as EpayAnswer[]).map((a, i) => {
    const amount = a?.amount_fen;
    const refund = a?.kind === 'refund';
    const states = refund ? ['succeeded', 'failed', 'processing', 'not_found'] : ['paid', 'unpaid', 'failed'];
    if (
      (a?.kind !== 'pay' && !refund) ||
      typeof a.order_no !== 'string' ||
      (refund && typeof a.refund_no !== 'string') ||
      !states.includes(a.state as string) ||
      (amount !== null && !Number.isSafeInteger(amount))
    ) {
      throw new BillRefusedError(`the epay answer ${i + 1} is malformed`);
    }
    return {
      lineNo: i + 1,
      text: JSON.stringify(a),
      kind: refund ? ('refund' as const) : ('pay' as const),
      channelTradeNo: typeof a.trade_no === 'string' ? a.trade_no : null,
      orderNo: a.order_no as string,
      refundNo: refund ? (a.refund_no as string) : null,
      amountFen: (amount as number | null) ?? 0,
      feeFen: 0,
      succeeded: a.state === (refund ? 'succeeded' : 'paid'),
    };
  });
}
