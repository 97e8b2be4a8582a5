import type { OrderStatus } from '../entities';

export interface OrderListFilter {
  status?: OrderStatus;
  orderType?: number;
  /** Unix seconds, inclusive. */
  startTime?: number;
  /** Unix seconds, inclusive. */
  endTime?: number;
  page: number;
  limit: number;
}

const DAY_SECONDS = 86_400;

/** Unix seconds, `from` inclusive, `to` exclusive. */
export interface SecondRange {
  from: number;
  to: number;
}

/** A time window cut at UTC midnights, the day boundaries of order_day_counts. */
export interface WindowSplit {
  /** Whole days inside the window as day numbers since 1970-01-01 (first inclusive, end exclusive; absent = unbounded); null when it holds none. */
  days: { first?: number; end?: number } | null;
  /** The partial days at its edges, counted over the index. */
  partial: SecondRange[];
}

/** Splits [from, to) (Unix seconds; absent = unbounded) into the whole UTC days inside it and the partial days at its edges. */
export function splitWindow(from: number | undefined, to: number | undefined): WindowSplit {
  const first = from === undefined ? undefined : Math.ceil(from / DAY_SECONDS);
  const end = to === undefined ? undefined : Math.floor(to / DAY_SECONDS);
  // Less than one whole day inside: one exact range (at most two days of rows).
  if (from !== undefined && to !== undefined && first! >= end!) return { days: null, partial: from < to ? [{ from, to }] : [] };
  const partial: SecondRange[] = [];
  if (to !== undefined && end! * DAY_SECONDS < to) partial.push({ from: end! * DAY_SECONDS, to });
  if (from !== undefined && from < first! * DAY_SECONDS) partial.push({ from, to: first! * DAY_SECONDS });
  return { days: { first, end }, partial };
}

/**
 * orderQueryList in one statement, so the total and the page come from one snapshot:
 *
 * - total: without a time bound, a sum over order_counts; with one, a sum over `segments`, the
 *   window cut into whole UTC days (order_day_counts) and the partial days at its edges
 *   (exact counts over ix_orders_merchant_created or ix_orders_merchant_status_created);
 * - page: newest first (created_at desc to the microsecond, then order_no desc) from the same
 *   index. Past page 1 the segments, newest first, tell which one holds the page's first row and
 *   how many rows lie above it: the scan starts at that segment's upper bound and skips only
 *   rows inside it, so a deep page reads the counters of the days above it, not their rows.
 *   The skipped rows are read from the index alone; only the page's rows are fetched whole.
 *
 * Rows past the last page: none, with the real total. Parameters are numbered as they are added.
 */
export function orderListQuery(merchantId: number, filter: OrderListFilter): { sql: string; params: unknown[] } {
  const params: unknown[] = [merchantId];
  const param = (value: unknown): string => `$${params.push(value)}`;
  const orderWhere = ['o.merchant_id = $1'];
  const counterWhere = ['c.merchant_id = $1'];
  if (filter.status !== undefined) {
    const status = param(filter.status);
    orderWhere.push(`o.status = ${status}`);
    counterWhere.push(`c.status = ${status}`);
  }
  if (filter.orderType !== undefined) {
    const orderType = param(filter.orderType);
    orderWhere.push(`o.order_type = ${orderType}::smallint`);
    counterWhere.push(`c.order_type = ${orderType}::smallint`);
  }
  const from = filter.startTime;
  // createtime is whole seconds: an inclusive end bound takes the whole of its last second.
  const to = filter.endTime === undefined ? undefined : filter.endTime + 1;
  const offset = (filter.page - 1) * filter.limit;
  const windowed = from !== undefined || to !== undefined;
  const at = (seconds: number): string => `to_timestamp(${param(seconds)}::bigint)`;

  const ctes: string[] = [];
  if (windowed || offset > 0) {
    const { days, partial } = splitWindow(from, to);
    const parts = partial.map(
      (range) =>
        `SELECT ${at(range.to)} AS upper, count(*) AS n FROM orders o
          WHERE ${orderWhere.join(' AND ')} AND o.created_at >= ${at(range.from)} AND o.created_at < ${at(range.to)}`,
    );
    if (days) {
      const dayWhere = [...counterWhere];
      if (days.first !== undefined) dayWhere.push(`c.day >= DATE '1970-01-01' + ${param(days.first)}::int`);
      if (days.end !== undefined) dayWhere.push(`c.day < DATE '1970-01-01' + ${param(days.end)}::int`);
      parts.push(`SELECT to_timestamp((c.day - DATE '1970-01-01' + 1)::bigint * ${DAY_SECONDS}) AS upper, sum(c.n)::bigint AS n
          FROM order_day_counts c WHERE ${dayWhere.join(' AND ')} GROUP BY c.day`);
    }
    // A window holding less than one second has no part at all.
    ctes.push(`segments AS (${parts.length > 0 ? parts.join(' UNION ALL ') : 'SELECT NULL::timestamptz AS upper, 0::bigint AS n WHERE false'})`);
  }
  const pageWhere = [...orderWhere];
  if (from !== undefined) pageWhere.push(`o.created_at >= ${at(from)}`);
  let skip = '0';
  if (offset > 0) {
    const rowsAbove = param(offset);
    ctes.push(`seek AS (
      SELECT upper, through - n AS above FROM (SELECT upper, n, sum(n) OVER (ORDER BY upper DESC) AS through FROM segments) running
      WHERE through > ${rowsAbove}::bigint ORDER BY upper DESC LIMIT 1)`);
    pageWhere.push('o.created_at < (SELECT upper FROM seek)');
    skip = `(SELECT ${rowsAbove}::bigint - above FROM seek)::bigint`;
  } else if (to !== undefined) {
    pageWhere.push(`o.created_at < ${at(to)}`);
  }
  ctes.push(`page AS (
    SELECT o.order_no, o.created_at FROM orders o WHERE ${pageWhere.join(' AND ')}
    ORDER BY o.created_at DESC, o.order_no DESC OFFSET ${skip} LIMIT ${param(filter.limit)}::int)`);
  const total = windowed ? 'SELECT coalesce(sum(n), 0) FROM segments' : `SELECT coalesce(sum(c.n), 0) FROM order_counts c WHERE ${counterWhere.join(' AND ')}`;
  const sql = `WITH ${ctes.join(',\n')}
    SELECT (${total})::bigint AS list_total, o.* FROM (SELECT 1) one
    LEFT JOIN (page p JOIN orders o ON o.order_no = p.order_no AND o.merchant_id = $1) ON true
    ORDER BY p.created_at DESC, p.order_no DESC`;
  return { sql, params };
}
