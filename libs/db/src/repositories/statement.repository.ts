import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { LEDGER_KINDS, type LedgerAccount, type LedgerKind } from '../entities';
import { onReplica } from '../replica';

export interface StatementEntry {
  id: string;
  kind: LedgerKind;
  account: LedgerAccount;
  amountFen: number;
  orderNo: string;
  merchantOrderNo: string | null;
  refundNo: string | null;
  createdAt: Date;
}

export type Balances = Record<LedgerAccount, number>;

/** A day's balances: before it, after it, and how many movements it had. */
export interface DayFigures {
  opening: Balances;
  closing: Balances;
  movements: number;
}

/** Where a day's statement goes on after `createdAt`/`id` (the CSV's batches). */
export interface StatementCursor {
  createdAt: Date;
  id: string;
}

/** The kinds that move the deposit balance; every other kind moves the available one. */
const DEPOSIT_KINDS = (Object.keys(LEDGER_KINDS) as LedgerKind[]).filter((kind) => LEDGER_KINDS[kind].account === 'deposit');

/** A day is closed this long after its end (and once no transaction older than its end is still open): its entries can no longer change. */
const CLOSING_MARGIN = `interval '1 hour'`;

/** The most days one step of keeping closed days aggregates (keepClosedDays). */
const KEEP_STEP_DAYS = 7;

/** The instants a day ($n, YYYY-MM-DD in Asia/Shanghai) starts and ends at. */
const start = (n: number): string => `($${n}::date::timestamp AT TIME ZONE 'Asia/Shanghai')`;
const end = (n: number): string => `(($${n}::date + 1)::timestamp AT TIME ZONE 'Asia/Shanghai')`;

/** Sums of entries by balance, and their movements (entries that moved money), from the rows of `source`. */
const SUMS = `coalesce(sum(amount_fen) FILTER (WHERE NOT kind = ANY($DEPOSIT)), 0)::text AS available,
              coalesce(sum(amount_fen) FILTER (WHERE kind = ANY($DEPOSIT)), 0)::text AS deposit,
              count(*) FILTER (WHERE amount_fen <> 0)::int AS movements`;

interface SumsRow {
  available: string;
  deposit: string;
  movements: number;
}

const balances = (available: string | number, deposit: string | number): Balances => ({ available: Number(available), deposit: Number(deposit) });
const plus = (a: Balances, b: Balances): Balances => ({ available: a.available + b.available, deposit: a.deposit + b.deposit });

/**
 * A merchant's statement of one Asia/Shanghai day (SPEC 6 Reconciliation, Merchant), at a cost
 * that does not grow with the merchant's history: the balances at the end of each closed day are
 * kept in ledger_day_balances (appended once, the first time a statement needs them, by one
 * aggregate over the days not yet kept), so a day's opening is one row and a closed day's closing
 * and count another; only today (and yesterday, in its first closing hour) is summed from the
 * ledger's index. Movements come a page at a time. Every query takes the merchant id first.
 */
@Injectable()
export class StatementRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The day's opening and closing balances and its number of movements. */
  async dayFigures(merchantId: number, day: string): Promise<DayFigures> {
    const through = await this.lastClosedDay(day);
    await this.keepClosedDays(merchantId, through);
    // Kept through `through`: the latest kept row at or before a closed day is that day's closing.
    const opening = await this.keptAtOrBefore(merchantId, day, false);
    if (through >= day) {
      const closing = await this.keptAtOrBefore(merchantId, day, true);
      return { opening: opening.balances, closing: closing.balances, movements: closing.day === day ? closing.movements : 0 };
    }
    // `day` is still open (today, or yesterday in its first closing hour): what followed the last closed
    // day (at most a day and an hour of entries) and the day itself, from the ledger's index.
    const [kept, between, ofDay] = await Promise.all([
      this.keptAtOrBefore(merchantId, through, true),
      this.sums(merchantId, through, day, 'before'),
      this.sums(merchantId, through, day, 'day'),
    ]);
    const start = plus(kept.balances, between.balances);
    return { opening: start, closing: plus(start, ofDay.balances), movements: ofDay.movements };
  }

  /** What the day's first `count` movements moved, per balance: the running balance where a page starts. */
  async movedBefore(merchantId: number, day: string, count: number): Promise<Balances> {
    if (count === 0) return { available: 0, deposit: 0 };
    const [row] = await onReplica(this.dataSource, (em) =>
      em.query<SumsRow[]>(
        `SELECT ${SUMS.replaceAll('$DEPOSIT', '$4')}
         FROM (SELECT kind, amount_fen FROM ledger_entries
                WHERE merchant_id = $1 AND created_at >= ${start(2)} AND created_at < ${end(2)} AND amount_fen <> 0
                ORDER BY created_at, id LIMIT $3) first`,
        [merchantId, day, count, DEPOSIT_KINDS],
      ),
    );
    return balances(row.available, row.deposit);
  }

  /** `limit` movements of the day after the first `offset`, oldest first. */
  async page(merchantId: number, day: string, offset: number, limit: number): Promise<StatementEntry[]> {
    return this.entries(
      `WHERE merchant_id = $1 AND created_at >= ${start(2)} AND created_at < ${end(2)} AND amount_fen <> 0 ORDER BY created_at, id OFFSET $3 LIMIT $4`,
      [merchantId, day, offset, limit],
    );
  }

  /** Up to `limit` movements of the day after `after` (from the first when null), oldest first: the CSV's next batch. */
  async batchAfter(merchantId: number, day: string, after: StatementCursor | null, limit: number): Promise<StatementEntry[]> {
    return this.entries(
      `WHERE merchant_id = $1 AND created_at >= ${start(2)} AND created_at < ${end(2)} AND amount_fen <> 0
         AND ($3::timestamptz IS NULL OR (created_at, id) > ($3::timestamptz, $4::bigint))
       ORDER BY created_at, id LIMIT $5`,
      [merchantId, day, after?.createdAt ?? null, after?.id ?? null, limit],
    );
  }

  /** The entries `where` picks (params: the merchant id first), with their order's and refund's numbers. */
  private async entries(where: string, params: unknown[]): Promise<StatementEntry[]> {
    // Movements read on the read replica when there is one (DATABASE_REPLICA_URL); the day's figures, which may append kept days, on the primary.
    const rows = await onReplica(this.dataSource, (em) =>
      em.query<
        { id: string; kind: LedgerKind; amount_fen: string; order_no: string; merchant_order_no: string | null; refund_no: string | null; created_at: Date }[]
      >(
        // The page is found on the index alone (skipping `offset` entries reads no table row), then its rows are read.
        `WITH page AS (SELECT id, created_at FROM ledger_entries ${where})
       SELECT l.id, l.kind, l.amount_fen, o.order_no, o.merchant_order_no, r.refund_no, l.created_at
         FROM page p
         JOIN ledger_entries l ON l.id = p.id AND l.merchant_id = $1
         JOIN orders o ON o.id = l.order_id AND o.merchant_id = $1
         LEFT JOIN refunds r ON r.id = l.refund_id
        ORDER BY p.created_at, p.id`,
        params,
      ),
    );
    return rows.map((r) => ({
      id: String(r.id),
      kind: r.kind,
      account: LEDGER_KINDS[r.kind].account,
      amountFen: Number(r.amount_fen),
      orderNo: r.order_no,
      merchantOrderNo: r.merchant_order_no,
      refundNo: r.refund_no,
      createdAt: r.created_at,
    }));
  }

  /**
   * `day`, or the last closed day before it: a day is closed once no entry can still join it
   * (it ended more than an hour ago, and no transaction of the database began before its end).
   */
  private async lastClosedDay(day: string): Promise<string> {
    const [row] = await this.dataSource.query<{ closed: string }[]>(
      `SELECT least((least(now() - ${CLOSING_MARGIN},
                           coalesce((SELECT min(xact_start) FROM pg_stat_activity
                                      WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()), now()))
                     AT TIME ZONE 'Asia/Shanghai')::date - 1, $1::date)::text AS closed`,
      [day],
    );
    return row.closed;
  }

  /**
   * Keeps the closing balances of every closed day through `through` not kept yet: per step, one
   * aggregate over at most a week of the merchant's entries after the last kept day (its first
   * entry's day at first), a row per day that moved money and one for the step's last day, so no
   * statement works on more than a week of entries and none runs into the statement timeout,
   * however long the history. Once per merchant and day, whoever asks first (the others wait on
   * the merchant's lock, then find it done); never an update.
   */
  private async keepClosedDays(merchantId: number, through: string): Promise<void> {
    while ((await this.keptAtOrBefore(merchantId, through, true)).day !== through) {
      await this.dataSource.transaction(async (em) => {
        await em.query(`SELECT pg_advisory_xact_lock(hashtext('ledger_day_balances'), $1)`, [merchantId]);
        const [base] = await em.query<{ day: string; available_fen: string; deposit_fen: string }[]>(
          `SELECT day::text, available_fen, deposit_fen FROM ledger_day_balances WHERE merchant_id = $1 AND day <= $2 ORDER BY day DESC LIMIT 1`,
          [merchantId, through],
        );
        if (base?.day === through) return;
        const [{ upto }] = await em.query<{ upto: string }[]>(
          `SELECT least($3::date, coalesce($2::date, (SELECT (min(created_at) AT TIME ZONE 'Asia/Shanghai')::date - 1 FROM ledger_entries WHERE merchant_id = $1), $3::date) + ${KEEP_STEP_DAYS})::text AS upto`,
          [merchantId, base?.day ?? null, through],
        );
        await em.query(
          `INSERT INTO ledger_day_balances (merchant_id, day, available_fen, deposit_fen, movements)
           SELECT $1, d.day, $4::bigint + sum(d.available) OVER w, $5::bigint + sum(d.deposit) OVER w, d.movements
             FROM (SELECT day, sum(available) AS available, sum(deposit) AS deposit, sum(movements)::int AS movements
                     FROM (SELECT (created_at AT TIME ZONE 'Asia/Shanghai')::date AS day,
                                  coalesce(sum(amount_fen) FILTER (WHERE NOT kind = ANY($6)), 0) AS available,
                                  coalesce(sum(amount_fen) FILTER (WHERE kind = ANY($6)), 0) AS deposit,
                                  count(*) FILTER (WHERE amount_fen <> 0) AS movements
                             FROM ledger_entries
                            WHERE merchant_id = $1 AND created_at >= coalesce(${end(2)}, '-infinity') AND created_at < ${end(3)}
                            GROUP BY 1
                           UNION ALL SELECT $3::date, 0, 0, 0) moved
                    GROUP BY day) d
           WINDOW w AS (ORDER BY d.day)
           ON CONFLICT (merchant_id, day) DO NOTHING`,
          [merchantId, base?.day ?? null, upto, base?.available_fen ?? 0, base?.deposit_fen ?? 0, DEPOSIT_KINDS],
        );
      });
    }
  }

  /** The latest kept day before `day` (or at it, when `orAt`): its closing balances, or zeros and a null day when none is kept. */
  private async keptAtOrBefore(merchantId: number, day: string, orAt: boolean): Promise<{ day: string | null; balances: Balances; movements: number }> {
    const [row] = await this.dataSource.query<{ day: string; available_fen: string; deposit_fen: string; movements: number }[]>(
      `SELECT day::text, available_fen, deposit_fen, movements FROM ledger_day_balances
        WHERE merchant_id = $1 AND day ${orAt ? '<=' : '<'} $2 ORDER BY day DESC LIMIT 1`,
      [merchantId, day],
    );
    return row
      ? { day: row.day, balances: balances(row.available_fen, row.deposit_fen), movements: row.movements }
      : { day: null, balances: balances(0, 0), movements: 0 };
  }

  /**
   * Sums from the ledger's index: `what` 'day' sums `day` itself; 'before' sums what lies between
   * the end of the closed day `since` and the start of `day` (nothing when `since` is its eve).
   */
  private async sums(merchantId: number, since: string, day: string, what: 'before' | 'day'): Promise<{ balances: Balances; movements: number }> {
    const [from, to, params] =
      what === 'day' ? [start(2), end(2), [merchantId, day, DEPOSIT_KINDS]] : [end(2), start(3), [merchantId, since, day, DEPOSIT_KINDS]];
    const [row] = await this.dataSource.query<SumsRow[]>(
      `SELECT ${SUMS.replaceAll('$DEPOSIT', `$${params.length}`)} FROM ledger_entries WHERE merchant_id = $1 AND created_at >= ${from} AND created_at < ${to}`,
      params,
    );
    return { balances: balances(row.available, row.deposit), movements: row.movements };
  }
}
