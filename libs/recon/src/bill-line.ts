import type { MovementKind } from '@app/db';

/** One line of a channel's bill, whatever its format (SPEC 6 Reconciliation). */
export interface BillLine {
  /** 1-based line number in the decoded file, so an operator finds it. */
  lineNo: number;
  /** The line as the file has it (decoded), kept with the result. */
  text: string;
  kind: MovementKind;
  channelTradeNo: string | null;
  orderNo: string;
  refundNo: string | null;
  /** Always positive: a refund line's amount is what went back. */
  amountFen: number;
  /** What the channel charged (negative when it gave a fee back). */
  feeFen: number;
  /** The channel moved the money (a query answer "unpaid" is a line that did not). */
  succeeded: boolean;
}

/** A bill that cannot be read as a whole: refused, nothing of it applied. */
export class BillRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BillRefusedError';
  }
}

/** "-12.30", "12.3", "12" -> signed fen; null for anything else (never a float on the way). */
export function parseSignedYuan(text: string): number | null {
  const m = /^(-)?(\d{1,12})(?:\.(\d{1,2}))?$/.exec(text.trim());
  if (!m) return null;
  const fen = Number(BigInt(m[2]) * 100n + BigInt((m[3] ?? '').padEnd(2, '0')));
  return m[1] ? -fen : fen;
}

/** UTF-8 text of a file, or a refusal when its bytes are not UTF-8. */
export function decodeUtf8(raw: Buffer, what: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(raw).replace(/^\uFEFF/, '');
  } catch {
    throw new BillRefusedError(`${what} is not UTF-8 text`);
  }
}
