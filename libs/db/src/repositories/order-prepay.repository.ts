import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { OrderPrepay } from '../entities/order-prepay.entity';

/** An order's prepay row as the cashier reads it. */
export type StoredPrepay = Pick<OrderPrepay, 'mode' | 'payer' | 'prepay' | 'validUntil'>;

interface PrepayRow {
  mode: string;
  payer: string | null;
  prepay: string | null;
  valid_until: Date | null;
}

const stored = (row: PrepayRow): StoredPrepay => ({ mode: row.mode, payer: row.payer, prepay: row.prepay, validUntil: row.valid_until });

/** The trade each order opened at its provider before the payer was sent (the cashier's prepays, SPEC 6). */
@Injectable()
export class OrderPrepayRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Binds the order to `mode` (and, for JSAPI, to its first payer) unless it is bound already, in
   * one statement; answers the binding that holds, this one or the one made first. Two devices at
   * once: exactly one binds, so the order never asks its provider for two trade types.
   */
  async claim(orderId: string, mode: string, payer: string | null): Promise<StoredPrepay> {
    const rows = await this.dataSource.query<PrepayRow[]>(
      `WITH claimed AS (
         INSERT INTO "order_prepays" ("order_id", "mode", "payer") VALUES ($1, $2, $3)
         ON CONFLICT ("order_id") DO NOTHING
         RETURNING "mode", "payer", "prepay", "valid_until")
       SELECT * FROM claimed
       UNION ALL
       SELECT "mode", "payer", "prepay", "valid_until" FROM "order_prepays" WHERE "order_id" = $1 AND NOT EXISTS (SELECT 1 FROM claimed)`,
      [orderId, mode, payer],
    );
    if (rows[0]) return stored(rows[0]);
    // A claim committed by another statement after this one's snapshot: read it now.
    const [row] = await this.dataSource.query<PrepayRow[]>(`SELECT "mode", "payer", "prepay", "valid_until" FROM "order_prepays" WHERE "order_id" = $1`, [
      orderId,
    ]);
    if (!row) throw new Error(`order ${orderId}: prepay claim neither made nor found`);
    return stored(row);
  }

  /** The order's binding, or null while it has none. */
  async find(orderId: string): Promise<StoredPrepay | null> {
    const [row] = await this.dataSource.query<PrepayRow[]>(`SELECT "mode", "payer", "prepay", "valid_until" FROM "order_prepays" WHERE "order_id" = $1`, [
      orderId,
    ]);
    return row ? stored(row) : null;
  }

  /** The provider's answer for the bound mode: kept until `validUntil`, with whom it is for. */
  async save(orderId: string, mode: string, payer: string | null, prepay: string, validUntil: Date): Promise<void> {
    await this.dataSource.query(
      `UPDATE "order_prepays" SET "payer" = $3, "prepay" = $4, "valid_until" = $5, "updated_at" = now() WHERE "order_id" = $1 AND "mode" = $2`,
      [orderId, mode, payer, prepay, validUntil],
    );
  }
}
