import { SELL_ORDER } from './order-type';

/**
 * Money on the way in and out. Inside the service an amount is an integer count of fen
 * and a rate is an integer count of 1e-8; BigInt carries the products, so no float ever
 * touches an amount.
 */
const YUAN_PATTERN = /^(\d{1,10})(?:\.(\d{1,2}))?$/;
const RATE_PATTERN = /^(\d)(?:\.(\d{1,8}))?$/;
const RATE_SCALE = 100_000_000n;

/** "100.5" or 100.5 -> 10050; null when the text is not a yuan amount of SPEC 5. */
export function parseYuan(value: unknown): number | null {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number' && Number.isFinite(value)) text = String(value);
  else return null;
  const m = YUAN_PATTERN.exec(text);
  if (!m) return null;
  const fraction = (m[2] ?? '').padEnd(2, '0');
  return Number(BigInt(m[1]) * 100n + BigInt(fraction));
}

/** 10050 -> "100.50" */
export function formatYuan(fen: number | bigint): string {
  const value = BigInt(fen);
  const sign = value < 0n ? '-' : '';
  const abs = value < 0n ? -value : value;
  return `${sign}${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`;
}

/** 123456 -> "¥1,234.56": how people read an amount (the portal); digits grouped by thousands. */
export function formatCny(fen: number | bigint): string {
  const [whole, cents] = formatYuan(fen).split('.');
  const negative = whole.startsWith('-');
  const digits = negative ? whole.slice(1) : whole;
  const grouped = digits.replace(/\B(?=(\d{3})+$)/g, ',');
  return `${negative ? '-' : ''}¥${grouped}.${cents}`;
}

/** 600000 (0.006) -> "0.6%"; at least one decimal, no trailing zeros beyond it. */
export function formatRatePercent(rateE8: number): string {
  const hundredths = BigInt(rateE8);
  const whole = hundredths / 1_000_000n;
  const fraction = (hundredths % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return `${whole}.${fraction || '0'}%`;
}

/** "0.006" -> 600000 (units of 1e-8); null unless 0 <= rate < 10 with at most 8 decimals. */
export function parseRate(value: unknown): number | null {
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
  if (typeof text !== 'string') return null;
  const m = RATE_PATTERN.exec(text);
  if (!m) return null;
  return Number(BigInt(m[1]) * RATE_SCALE + BigInt((m[2] ?? '').padEnd(8, '0')));
}

/**
 * A rate read back from the database (a merchant's, a link's, a channel's, an order's) as e8.
 * The schema keeps rates within 0..1; anything else there is corruption: thrown, so the
 * request is a logged 50000 and never a fee of zero. `owner` names the row for the log.
 */
export function storedRateE8(value: unknown, owner: string): number {
  const rate = parseRate(value);
  if (rate === null || rate > Number(RATE_SCALE)) throw new Error(`the stored rate of ${owner} is not a rate from 0 to 1: ${JSON.stringify(value)}`);
  return rate;
}

/** 600000 -> "0.00600000" */
export function formatRate(rateE8: number): string {
  const value = BigInt(rateE8);
  return `${value / RATE_SCALE}.${(value % RATE_SCALE).toString().padStart(8, '0')}`;
}

/** round_half_up(fen * rate) for non-negative operands. */
export function applyRate(fen: number, rateE8: number): number {
  const product = BigInt(fen) * BigInt(rateE8);
  return Number((product + RATE_SCALE / 2n) / RATE_SCALE);
}

export interface OrderAmounts {
  cnyFen: number;
  serviceFen: number;
  depositFen: number;
  merchantActualFen: number;
  /** cny - service, in fen: the interface's merchant_amount before it is written as yuan. */
  merchantFen: number;
}

function merchantFenOf(cnyFen: number, serviceFen: number): number {
  return cnyFen - serviceFen;
}

/** The amounts of SPEC 5, all in fen. */
export function computeOrderAmounts(cnyFen: number, serviceRateE8: number, depositRateE8: number): OrderAmounts {
  const serviceFen = applyRate(cnyFen, serviceRateE8);
  const merchantFen = merchantFenOf(cnyFen, serviceFen);
  const depositFen = applyRate(merchantFen, depositRateE8);
  return { cnyFen, serviceFen, depositFen, merchantFen, merchantActualFen: merchantFen - depositFen };
}

/**
 * A sell order's amounts, from the balance's side: the payee gets cny, the merchant pays cny plus
 * the service fee (computed as for a top-up), no deposit; merchant_actual is what leaves the balance.
 */
export function computeSellOrderAmounts(cnyFen: number, serviceRateE8: number): OrderAmounts {
  const serviceFen = applyRate(cnyFen, serviceRateE8);
  const debitFen = cnyFen + serviceFen;
  return { cnyFen, serviceFen, depositFen: 0, merchantFen: debitFen, merchantActualFen: debitFen };
}

/**
 * SPEC 5's merchant_amount of an order as yuan text: (cny - service) for a top-up; for a sell
 * order (order_type 2) what it takes from the balance, cny + service.
 */
export function merchantAmount(order: { orderType: number; cnyFen: number; serviceFen: number }): string {
  return formatYuan(order.orderType === SELL_ORDER ? order.cnyFen + order.serviceFen : merchantFenOf(order.cnyFen, order.serviceFen));
}
