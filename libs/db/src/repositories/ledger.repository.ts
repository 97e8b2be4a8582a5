import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { DomainError, ErrorCode } from '@app/common';
import { Balance, LEDGER_KINDS, type LedgerAccount, type LedgerKind, type Order } from '../entities';
import { onReplica } from '../replica';

/** What an entry is about: an order, or a refund of that order. */
export interface LedgerSubject {
  merchantId: number;
  orderId: string;
  refundId?: string | null;
}

/** An entry as the operator's merchant:ledger lists it. */
export interface LedgerLine {
  id: string;
  kind: LedgerKind;
  account: LedgerAccount;
  amountFen: number;
  orderNo: string;
  refundNo: string | null;
  createdAt: Date;
}

interface LedgerRow {
  id: string;
  kind: LedgerKind;
  amount_fen: string;
  order_no: string;
  refund_no: string | null;
  created_at: Date;
}

function ledgerLine(r: LedgerRow): LedgerLine {
  return {
    id: String(r.id),
    kind: r.kind,
    account: LEDGER_KINDS[r.kind].account,
    amountFen: Number(r.amount_fen),
    orderNo: r.order_no,
    refundNo: r.refund_no,
    createdAt: r.created_at,
  };
}

const CHECK_VIOLATION = '23514';

/**
 * The merchant's money: ledger entries and the balances they add up to. Every movement is one
 * entry, written in the caller's transaction with the state change that causes it; the unique
 * (subject, kind) indexes make a second attempt insert nothing and move nothing. A debit takes
 * the money only if it is there, in one conditional statement, and the balances' CHECK refuses
 * a negative balance whatever the code does: never a read then a write.
 */
@Injectable()
export class LedgerRepository {
  constructor(@InjectRepository(Balance) private readonly balances: Repository<Balance>) {}

  /**
   * Takes `amountFen` from the kind's balance, once per subject and kind. Throws 40902 when the
   * balance is lower (the caller's transaction then rolls back with it).
   */
  debit(em: EntityManager, kind: LedgerKind, subject: LedgerSubject, amountFen: number): Promise<boolean> {
    return this.post(em, kind, subject, -amountFen);
  }

  /**
   * Undoes the entry `original` of the subject with an entry of kind `reversal` for the opposite
   * amount, once; nothing when the original was never written. Returns whether this call moved money.
   */
  async reverse(em: EntityManager, original: LedgerKind, reversal: LedgerKind, subject: LedgerSubject): Promise<boolean> {
    const [entry] = await em.query<{ amount_fen: string }[]>(
      `SELECT "amount_fen" FROM "ledger_entries"
        WHERE "merchant_id" = $1 AND "order_id" = $2 AND "refund_id" IS NOT DISTINCT FROM $3::bigint AND "kind" = $4`,
      [subject.merchantId, subject.orderId, subject.refundId ?? null, original],
    );
    if (!entry) return false;
    return this.post(em, reversal, subject, -Number(entry.amount_fen));
  }

  /**
   * Credits a completed top-up: merchant_actual to available, deposit to deposit. A second call
   * inserts nothing and moves no money. Returns whether this call credited. The one credit path is
   * credit_order; settle_order calls it too, so a merchant is credited by one writer.
   */
  async creditOrder(em: EntityManager, order: Order): Promise<boolean> {
    // credit_order (libs/db/src/sql/settlement-functions.ts), as settle_order ends: the balance row is taken by its last step.
    const [row] = await em.query<{ credited: boolean }[]>(`SELECT "credit_order"($1, $2, $3, $4) AS "credited"`, [
      order.merchantId,
      order.id,
      order.merchantActualFen,
      order.depositFen,
    ]);
    return row.credited;
  }

  /** The merchant's balances; zero before its first credit. */
  async balanceOf(merchantId: number): Promise<{ availableFen: number; depositFen: number }> {
    const row = await this.balances.findOneBy({ merchantId });
    return { availableFen: row?.availableFen ?? 0, depositFen: row?.depositFen ?? 0 };
  }

  /** The merchant's latest entries, newest first. */
  async latest(merchantId: number, limit: number): Promise<LedgerLine[]> {
    const rows = await this.balances.query<LedgerRow[]>(
      `SELECT l."id", l."kind", l."amount_fen", o."order_no", r."refund_no", l."created_at"
         FROM "ledger_entries" l
         JOIN "orders" o ON o."id" = l."order_id"
         LEFT JOIN "refunds" r ON r."id" = l."refund_id"
        WHERE l."merchant_id" = $1
        ORDER BY l."created_at" DESC, l."id" DESC
        LIMIT $2`,
      [merchantId, limit],
    );
    return rows.map(ledgerLine);
  }

  /**
   * The portal's ledger: the merchant's entries that moved money (a zero deposit of an order
   * with no deposit rate moves nothing), newest first, `limit` at a time from after the entry
   * `beforeId`. The cursor is looked up under the same merchant, so another merchant's id gives
   * an empty page, never its entries' neighbours.
   */
  async movements(merchantId: number, limit: number, beforeId: string | null = null): Promise<LedgerLine[]> {
    // The portal's list of movements, on the read replica when there is one (DATABASE_REPLICA_URL).
    const rows = await onReplica(this.balances.manager.connection, (em) =>
      em.query<LedgerRow[]>(
        `SELECT l."id", l."kind", l."amount_fen", o."order_no", r."refund_no", l."created_at"
         FROM "ledger_entries" l
         JOIN "orders" o ON o."id" = l."order_id"
         LEFT JOIN "refunds" r ON r."id" = l."refund_id"
        WHERE l."merchant_id" = $1 AND l."amount_fen" <> 0
          AND ($3::bigint IS NULL OR (l."created_at", l."id") < (SELECT c."created_at", c."id" FROM "ledger_entries" c WHERE c."merchant_id" = $1 AND c."id" = $3::bigint))
        ORDER BY l."created_at" DESC, l."id" DESC
        LIMIT $2`,
        [merchantId, limit, beforeId],
      ),
    );
    return rows.map(ledgerLine);
  }

  /** The sum of every entry of the merchant, per balance: what the balances must equal. */
  async totals(merchantId: number): Promise<Record<LedgerAccount, number>> {
    const rows = await this.balances.query<{ kind: LedgerKind; total: string }[]>(
      `SELECT "kind", sum("amount_fen")::text AS "total" FROM "ledger_entries" WHERE "merchant_id" = $1 GROUP BY "kind"`,
      [merchantId],
    );
    const totals: Record<LedgerAccount, number> = { available: 0, deposit: 0 };
    for (const row of rows) totals[LEDGER_KINDS[row.kind].account] += Number(row.total);
    return totals;
  }

  /** One entry, then its amount on its balance; a debit the balance cannot cover is 40902. */
  private async post(em: EntityManager, kind: LedgerKind, subject: LedgerSubject, signedFen: number): Promise<boolean> {
    const inserted = await em.query<{ id: string }[]>(
      `INSERT INTO "ledger_entries" ("merchant_id", "order_id", "refund_id", "kind", "amount_fen") VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT DO NOTHING RETURNING "id"`,
      [subject.merchantId, subject.orderId, subject.refundId ?? null, kind, signedFen],
    );
    if (inserted.length === 0) return false;
    const available = LEDGER_KINDS[kind].account === 'available' ? signedFen : 0;
    const deposit = LEDGER_KINDS[kind].account === 'deposit' ? signedFen : 0;
    const applied = signedFen >= 0 ? await this.add(em, subject.merchantId, available, deposit) : await this.take(em, subject.merchantId, available, deposit);
    if (!applied) throw new DomainError(ErrorCode.InsufficientBalance);
    return true;
  }

  private async add(em: EntityManager, merchantId: number, available: number, deposit: number): Promise<boolean> {
    await em.query(
      `INSERT INTO "balances" ("merchant_id", "available_fen", "deposit_fen", "updated_at") VALUES ($1, $2, $3, now())
       ON CONFLICT ("merchant_id") DO UPDATE SET
         "available_fen" = "balances"."available_fen" + EXCLUDED."available_fen",
         "deposit_fen" = "balances"."deposit_fen" + EXCLUDED."deposit_fen",
         "updated_at" = now()`,
      [merchantId, available, deposit],
    );
    return true;
  }

  /**
   * Takes the money only if it is there. A concurrent debit holds the row; once it commits the
   * WHERE is evaluated again on the new balance, so two debits never take the same money.
   */
  private async take(em: EntityManager, merchantId: number, available: number, deposit: number): Promise<boolean> {
    try {
      const [rows] = await em.query<[unknown[], number]>(
        `UPDATE "balances" SET "available_fen" = "available_fen" + $2, "deposit_fen" = "deposit_fen" + $3, "updated_at" = now()
          WHERE "merchant_id" = $1 AND "available_fen" + $2 >= 0 AND "deposit_fen" + $3 >= 0 RETURNING "merchant_id"`,
        [merchantId, available, deposit],
      );
      return rows.length > 0;
    } catch (err) {
      // The CHECK is the last word, should a statement ever try to go below zero.
      const code = (err as { driverError?: { code?: string }; code?: string }).driverError?.code ?? (err as { code?: string }).code;
      if (code === CHECK_VIOLATION) return false;
      throw err;
    }
  }
}
