import { type BillLine, BillRefusedError, decodeUtf8 } from '../bill-line';

interface EpayAnswer {
  order_no: unknown;
  state: unknown;
  amount_fen: unknown;
  trade_no: unknown;
}

/** Reads the day's epay answers (EpayAdapter.bills): a paid answer is a pay line, any other a line that moved nothing. */
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
    if (typeof a?.order_no !== 'string' || !['paid', 'unpaid', 'failed'].includes(a.state as string) || (amount !== null && !Number.isSafeInteger(amount))) {
      throw new BillRefusedError(`the epay answer ${i + 1} is malformed`);
    }
    return {
      lineNo: i + 1,
      text: JSON.stringify(a),
      kind: 'pay' as const,
      channelTradeNo: typeof a.trade_no === 'string' ? a.trade_no : null,
      orderNo: a.order_no,
      refundNo: null,
      amountFen: (amount as number | null) ?? 0,
      feeFen: 0,
      succeeded: a.state === 'paid',
    };
  });
}
