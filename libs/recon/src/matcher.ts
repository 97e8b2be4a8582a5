import { type MovementKind, type OurMovement, RECON_CLASSES, type ReconClass, type ReconLineRow, type ReconTotals } from '@app/db';
import type { BillLine } from './bill-line';

function key(kind: MovementKind, orderNo: string, refundNo: string | null): string {
  return kind === 'refund' ? `refund:${refundNo}` : `pay:${orderNo}`;
}

function signed(kind: MovementKind, fen: number): number {
  return kind === 'pay' ? fen : -fen;
}

/** Which class a bill line falls in, against our record of the same subject (or none). */
function classify(line: BillLine, ours: OurMovement | undefined): { cls: ReconClass; note: string | null } {
  if (!line.succeeded) return ours?.moved ? { cls: 'status_mismatch', note: 'the channel moved no money' } : { cls: 'matched', note: null };
  if (!ours) return { cls: 'missing_local', note: 'no such record of ours on this channel' };
  if (!ours.moved) {
    // A payment we have as pending or cancelled is ours to pick up; a refund we did not complete is not.
    return ours.kind === 'pay' ? { cls: 'missing_local', note: null } : { cls: 'status_mismatch', note: 'the channel refunded' };
  }
  return ours.amountFen === line.amountFen ? { cls: 'matched', note: ours.inDay ? null : 'ours is of another day' } : { cls: 'amount_mismatch', note: null };
}

/**
 * SPEC 6 Reconciliation, as one pure function: every bill line and every movement of ours of the
 * day ends in exactly one class. A line is matched to our record of the same subject (the order
 * for a payment, the refund for a refund); a second line about one subject is a status_mismatch.
 */
export function reconcile(bill: BillLine[], ours: OurMovement[]): { lines: ReconLineRow[]; totals: ReconTotals } {
  const byKey = new Map(ours.map((m) => [key(m.kind, m.orderNo, m.refundNo), m]));
  const seen = new Set<string>();
  const lines: ReconLineRow[] = [];
  let billTotalFen = 0;
  let feeFen = 0;
  for (const line of bill) {
    const k = key(line.kind, line.orderNo, line.refundNo);
    const mine = byKey.get(k);
    const { cls, note } = seen.has(k) ? { cls: 'status_mismatch' as const, note: 'a second line about the same subject' } : classify(line, mine);
    seen.add(k);
    if (line.succeeded) {
      billTotalFen += signed(line.kind, line.amountFen);
      feeFen += line.feeFen;
    }
    lines.push({
      class: cls,
      kind: line.kind,
      orderNo: line.orderNo,
      refundNo: line.refundNo,
      channelTradeNo: line.channelTradeNo,
      billAmountFen: line.amountFen,
      ourAmountFen: mine?.amountFen ?? null,
      feeFen: line.feeFen,
      ourStatus: mine?.status ?? null,
      billLineNo: line.lineNo,
      billLine: line.text,
      note,
    });
  }
  let ourTotalFen = 0;
  for (const m of ours) {
    if (!m.inDay || !m.moved) continue;
    ourTotalFen += signed(m.kind, m.amountFen);
    if (seen.has(key(m.kind, m.orderNo, m.refundNo))) continue;
    lines.push({
      class: 'missing_channel',
      kind: m.kind,
      orderNo: m.orderNo,
      refundNo: m.refundNo,
      channelTradeNo: null,
      billAmountFen: null,
      ourAmountFen: m.amountFen,
      feeFen: null,
      ourStatus: m.status,
      billLineNo: null,
      billLine: null,
      note: null,
    });
  }
  const counts = Object.fromEntries(RECON_CLASSES.map((c) => [c, 0])) as Record<ReconClass, number>;
  for (const l of lines) counts[l.class]++;
  return { lines, totals: { billTotalFen, ourTotalFen, feeFen, differenceFen: billTotalFen - ourTotalFen, counts } };
}
