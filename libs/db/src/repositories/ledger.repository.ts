import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { Balance, type Order } from '../entities';

/** The merchant's money: ledger lines and the balances they add up to. */
@Injectable()
export class LedgerRepository {
  constructor(@InjectRepository(Balance) private readonly balances: Repository<Balance>) {}

  /**
   * Credits a completed order: merchant_actual to available, deposit to deposit. The unique
   * (order_id, kind) index makes a second call insert nothing and move no money. Returns
   * whether this call credited.
   */
  async creditOrder(em: EntityManager, order: Order): Promise<boolean> {
    const rows = await em.query<{ kinds: string[] | null }[]>(
      `WITH ins AS (
         INSERT INTO "ledger_entries" ("merchant_id", "order_id", "kind", "amount_fen")
         VALUES ($1, $2, 'order_credit', $3), ($1, $2, 'order_deposit', $4)
         ON CONFLICT ("order_id", "kind") DO NOTHING
         RETURNING "kind")
       SELECT array_agg("kind") AS "kinds" FROM ins`,
      [order.merchantId, order.id, order.merchantActualFen, order.depositFen],
    );
    const inserted = rows[0]?.kinds ?? [];
    if (inserted.length === 0) return false;
    const available = inserted.includes('order_credit') ? order.merchantActualFen : 0;
    const deposit = inserted.includes('order_deposit') ? order.depositFen : 0;
    await em.query(
      `INSERT INTO "balances" ("merchant_id", "available_fen", "deposit_fen", "updated_at") VALUES ($1, $2, $3, now())
       ON CONFLICT ("merchant_id") DO UPDATE SET
         "available_fen" = "balances"."available_fen" + EXCLUDED."available_fen",
         "deposit_fen" = "balances"."deposit_fen" + EXCLUDED."deposit_fen",
         "updated_at" = now()`,
      [order.merchantId, available, deposit],
    );
    return true;
  }

  /** The merchant's balances; zero before its first credit. */
  async balanceOf(merchantId: number): Promise<{ availableFen: number; depositFen: number }> {
    const row = await this.balances.findOneBy({ merchantId });
    return { availableFen: row?.availableFen ?? 0, depositFen: row?.depositFen ?? 0 };
  }
}
