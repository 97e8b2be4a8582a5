import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { unsettledOrderSql } from '../entities';

/** A delivery as callback:list --merchant shows it: one line, no attempts. */
export interface MerchantDeliveryLine {
  id: string;
  orderNo: string;
  eventId: string;
  event: string;
  status: 'pending' | 'succeeded' | 'failed';
  attemptsMade: number;
  destination: string;
  lastError: string | null;
  nextAttemptAt: Date;
  createdAt: Date;
  updatedAt: Date;
}

/** An open (merchant, destination) circuit and what it holds back. */
export interface OpenCircuit {
  merchantId: number;
  destination: string;
  consecutiveFailures: number;
  openSince: Date;
  nextProbeAt: Date | null;
  lastFailureAt: Date | null;
  heldDeliveries: number;
}

/** What order:show prints: never a secret, a sealed value or a full payee account. */
export interface OrderDetail {
  order: Record<string, unknown>;
  events: { id: string; type: string; seq: string; createdAt: Date }[];
  refunds: Record<string, unknown>[];
  payout: Record<string, unknown> | null;
  ledger: { id: string; kind: string; amountFen: number; refundNo: string | null; createdAt: Date }[];
}

/** An order, refund or payout that has not moved on for longer than expected. */
export interface StuckItem {
  kind: 'order' | 'refund' | 'payout';
  orderNo: string;
  refundNo: string | null;
  merchantId: number;
  status: string;
  since: Date;
}

/** Money that stopped moving (SPEC 10, signals for the pager), counted by kind. */
export const STUCK_MONEY_KINDS = ['refund_processing', 'payout_processing', 'order_not_completed', 'bill_refused'] as const;
export type StuckMoneyKind = (typeof STUCK_MONEY_KINDS)[number];

/**
 * What the operator's 3 a.m. tools read and repair (callback:list --merchant, callback:circuits,
 * callback:circuit:reset, order:show, order:stuck), across merchants, each statement by an index.
 */
@Injectable()
export class OperationsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The merchant's deliveries, newest first, of a status and since a time when given. */
  deliveriesOfMerchant(merchantId: number, status: string | null, since: Date | null, limit: number): Promise<MerchantDeliveryLine[]> {
    return this.dataSource.query(
      `SELECT d.id, o.order_no AS "orderNo", d.event_id AS "eventId", e.type AS "event", d.status, d.attempts_made AS "attemptsMade",
              d.destination, d.last_error AS "lastError", d.next_attempt_at AS "nextAttemptAt", d.created_at AS "createdAt", d.updated_at AS "updatedAt"
         FROM callback_deliveries d JOIN orders o ON o.id = d.order_id JOIN order_events e ON e.id = d.event_id
        WHERE d.merchant_id = $1 AND ($2::text IS NULL OR d.status = $2) AND ($3::timestamptz IS NULL OR d.updated_at >= $3)
        ORDER BY d.updated_at DESC, d.id DESC
        LIMIT $4`,
      [merchantId, status, since, limit],
    );
  }

  /** Every circuit open now, oldest first, with the pending deliveries of its key. */
  async openCircuits(): Promise<OpenCircuit[]> {
    const rows: (Omit<OpenCircuit, 'heldDeliveries'> & { heldDeliveries: string })[] = await this.dataSource.query(
      `SELECT c.merchant_id AS "merchantId", c.destination, c.consecutive_failures AS "consecutiveFailures", c.open_since AS "openSince",
              c.next_probe_at AS "nextProbeAt", c.last_failure_at AS "lastFailureAt",
              (SELECT count(*) FROM callback_deliveries d WHERE d.merchant_id = c.merchant_id AND d.destination = c.destination AND d.status = 'pending') AS "heldDeliveries"
         FROM callback_circuits c WHERE c.open_since IS NOT NULL
        ORDER BY c.open_since, c.merchant_id, c.destination`,
    );
    return rows.map((r) => ({ ...r, heldDeliveries: Number(r.heldDeliveries) }));
  }

  /**
   * The mirror of callback:circuit:reset (the circuit itself lives with the key's slots and line,
   * DestinationGate): the key's row closed as a successful probe would close it. Null when the
   * key has no circuit row.
   */
  async closeCircuit(merchantId: number, destination: string): Promise<{ wasOpen: boolean } | null> {
    const [row]: { was_open: boolean }[] = await this.dataSource.query(
      `WITH old AS (SELECT open_since FROM callback_circuits WHERE merchant_id = $1 AND destination = $2 FOR NO KEY UPDATE),
            closed AS (UPDATE callback_circuits c SET consecutive_failures = 0, open_since = NULL, next_probe_at = NULL, updated_at = now()
                         FROM old WHERE c.merchant_id = $1 AND c.destination = $2
                       RETURNING old.open_since IS NOT NULL AS was_open)
       SELECT was_open FROM closed`,
      [merchantId, destination],
    );
    return row ? { wasOpen: row.was_open } : null;
  }

  async orderDetail(orderNo: string): Promise<OrderDetail | null> {
    const [order]: Record<string, unknown>[] = await this.dataSource.query(
      `SELECT o.id, o.order_no, o.merchant_id, o.channel_id, o.order_type, o.status, o.payment_method, o.cny_fen, o.service_rate, o.service_fen,
              o.deposit_rate, o.deposit_fen, o.merchant_actual_fen, o.merchant_order_no, o.notify_url, o.channel_trade_no, o.late_payment,
              o.paid_at, o.expires_at, o.created_at, o.updated_at
         FROM orders o WHERE o.order_no = $1`,
      [orderNo],
    );
    if (!order) return null;
    const id = order.id as string;
    const [events, refunds, payouts, ledger] = await Promise.all([
      this.dataSource.query(`SELECT id, type, seq, created_at AS "createdAt" FROM order_events WHERE order_id = $1 ORDER BY seq`, [id]),
      this.dataSource.query(
        `SELECT refund_no, merchant_refund_no, refund_fen, reason, status, channel_refund_no, failure, notify_url, attempted_at, created_at, updated_at
           FROM refunds WHERE order_id = $1 ORDER BY created_at, id`,
        [id],
      ),
      // The masked account only: payee_account_enc never leaves the database here.
      this.dataSource.query(
        `SELECT payee_name, payee_account_masked, payee_bank, channel_payout_no, failure, attempted_at, settled_at FROM payouts WHERE order_id = $1`,
        [id],
      ),
      this.dataSource.query(
        `SELECT l.id, l.kind, l.amount_fen AS "amountFen", r.refund_no AS "refundNo", l.created_at AS "createdAt"
           FROM ledger_entries l LEFT JOIN refunds r ON r.id = l.refund_id WHERE l.order_id = $1 ORDER BY l.created_at, l.id`,
        [id],
      ),
    ]);
    return {
      order,
      events,
      refunds,
      payout: payouts[0] ?? null,
      ledger: (ledger as OrderDetail['ledger']).map((l) => ({ ...l, amountFen: Number(l.amountFen) })),
    };
  }

  /**
   * The stuck-money gauge's figures, each from a partial index over the few rows still open:
   * refunds processing and payouts unsettled for more than an hour, orders paid but not completed
   * for more than 10 minutes, and channel days of the last week whose latest bill was refused.
   */
  async stuckMoney(): Promise<Record<StuckMoneyKind, number>> {
    const [row]: Record<StuckMoneyKind, number>[] = await this.dataSource.query(
      `SELECT (SELECT count(*)::int FROM refunds WHERE status = 'processing' AND created_at < now() - interval '1 hour') AS refund_processing,
              (SELECT count(*)::int FROM payouts p JOIN orders o ON o.id = p.order_id
                WHERE p.settled_at IS NULL AND o.created_at < now() - interval '1 hour') AS payout_processing,
              (SELECT count(*)::int FROM orders WHERE ${unsettledOrderSql()} AND updated_at < now() - interval '10 minutes') AS order_not_completed,
              (SELECT count(*)::int FROM (
                 SELECT DISTINCT ON (channel_id, bill_date) status FROM recon_runs
                  WHERE bill_date >= (now() AT TIME ZONE 'Asia/Shanghai')::date - 7
                  ORDER BY channel_id, bill_date, id DESC) latest
                WHERE status = 'refused') AS bill_refused`,
    );
    return row;
  }

  /**
   * Orders paid or confirmed before `before` (the lifecycle moves them on within minutes), refunds
   * still processing and payouts not settled since then: oldest first, at most `limit` of each.
   */
  async stuck(before: Date, limit: number): Promise<StuckItem[]> {
    const [orders, refunds, payouts]: StuckItem[][] = await Promise.all([
      this.dataSource.query(
        `SELECT 'order' AS kind, order_no AS "orderNo", NULL AS "refundNo", merchant_id AS "merchantId", status, updated_at AS since
           FROM orders WHERE ${unsettledOrderSql()} AND updated_at < $1 ORDER BY updated_at LIMIT $2`,
        [before, limit],
      ),
      this.dataSource.query(
        `SELECT 'refund' AS kind, order_no AS "orderNo", refund_no AS "refundNo", merchant_id AS "merchantId", status, created_at AS since
           FROM refunds WHERE status = 'processing' AND created_at < $1 ORDER BY created_at LIMIT $2`,
        [before, limit],
      ),
      this.dataSource.query(
        `SELECT 'payout' AS kind, o.order_no AS "orderNo", NULL AS "refundNo", o.merchant_id AS "merchantId", o.status, p.attempted_at AS since
           FROM payouts p JOIN orders o ON o.id = p.order_id WHERE p.settled_at IS NULL AND p.attempted_at < $1 ORDER BY p.attempted_at LIMIT $2`,
        [before, limit],
      ),
    ]);
    return [...orders, ...refunds, ...payouts];
  }
}
