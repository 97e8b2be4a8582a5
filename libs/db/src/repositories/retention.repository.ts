import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';

/**
 * SQL true when the order `$ref` is still needed whole (SPEC 10 Retention): a pending delivery,
 * a refund still processing, a payout not settled, or a paid day its channel reconciles and has
 * not reconciled yet (a channel that never had a run has no day to wait for).
 */
function orderStillNeededSql(ref: string): string {
  return `(EXISTS (SELECT 1 FROM callback_deliveries p WHERE p.order_id = ${ref} AND p.status = 'pending')
        OR EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = ${ref} AND r.status = 'processing')
        OR EXISTS (SELECT 1 FROM payouts y WHERE y.order_id = ${ref} AND y.settled_at IS NULL)
        OR EXISTS (SELECT 1 FROM orders o WHERE o.id = ${ref} AND o.paid_at IS NOT NULL
                      AND EXISTS (SELECT 1 FROM recon_runs rr WHERE rr.channel_id = o.channel_id)
                      AND NOT EXISTS (SELECT 1 FROM recon_runs rr WHERE rr.channel_id = o.channel_id AND rr.status = 'completed'
                                         AND rr.bill_date = (o.paid_at AT TIME ZONE 'Asia/Shanghai')::date)))`;
}

export interface RetentionBatch {
  attempts: number;
  deliveries: number;
  events: number;
}

/**
 * The retention sweep's deletes, one bounded batch per call, each walking an index from the
 * oldest row: ended deliveries by when they ended (their attempts with them), then events with
 * no delivery left, then (merchant, destination) circuits without traffic.
 *
 * Each batch runs with JIT off. The planner cannot tell how soon a LIMIT over these anti-joins
 * fills (its statistics say old events still have deliveries, which the batches before just
 * deleted), so it costs a batch as a walk of the whole index: past jit_optimize_above_cost, and
 * every batch compiled ~90 functions for ~600 ms to delete 1,000 rows in ~30 ms (EXPLAIN
 * ANALYZE at 100k old rows; test/retention-scale.e2e-spec.ts asserts no batch plan has JIT).
 */
@Injectable()
export class RetentionRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** One batch statement in its own short transaction, with JIT off for it alone; answers its one row. */
  private async batch<T>(sql: string, params: unknown[]): Promise<T> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query('SET LOCAL jit = off');
      const [row]: T[] = await manager.query(sql, params);
      return row;
    });
  }

  /** Up to `limit` ended deliveries that ended before `before`, with their attempts. */
  async deleteDeliveries(before: Date, limit: number): Promise<{ attempts: number; deliveries: number }> {
    return this.batch<{ attempts: number; deliveries: number }>(
      `WITH doomed AS (
         SELECT d.id FROM callback_deliveries d
          WHERE d.status <> 'pending' AND d.updated_at < $1 AND NOT ${orderStillNeededSql('d.order_id')}
          ORDER BY d.updated_at LIMIT $2 FOR UPDATE SKIP LOCKED),
       ids AS (SELECT array_agg(id) AS ids FROM doomed),
       gone_attempts AS (DELETE FROM callback_attempts a WHERE a.delivery_id = ANY ((SELECT ids FROM ids)::uuid[]) RETURNING 1),
       gone AS (DELETE FROM callback_deliveries d WHERE d.id = ANY ((SELECT ids FROM ids)::uuid[]) RETURNING 1)
       SELECT (SELECT count(*) FROM gone_attempts)::int AS attempts, (SELECT count(*) FROM gone)::int AS deliveries`,
      [before, limit],
    );
  }

  /** Up to `limit` events written before `before` that no delivery refers to any more. */
  async deleteEvents(before: Date, limit: number): Promise<number> {
    const row = await this.batch<{ events: number }>(
      `WITH doomed AS (
         SELECT e.id FROM order_events e
          WHERE e.created_at < $1 AND NOT EXISTS (SELECT 1 FROM callback_deliveries d WHERE d.event_id = e.id)
            AND NOT ${orderStillNeededSql('e.order_id')}
          ORDER BY e.created_at LIMIT $2 FOR UPDATE SKIP LOCKED),
       gone AS (DELETE FROM order_events e WHERE e.id = ANY ((SELECT array_agg(id) FROM doomed)::uuid[]) RETURNING 1)
       SELECT count(*)::int AS events FROM gone`,
      [before, limit],
    );
    return row.events;
  }

  /** Circuits untouched since `before` whose key has no pending delivery: a destination nobody sends to any more. */
  async deleteIdleCircuits(before: Date, limit: number): Promise<number> {
    const row = await this.batch<{ circuits: number }>(
      `WITH doomed AS (
         SELECT c.merchant_id, c.destination FROM callback_circuits c
          WHERE c.updated_at < $1
            AND NOT EXISTS (SELECT 1 FROM callback_deliveries d WHERE d.merchant_id = c.merchant_id AND d.destination = c.destination AND d.status = 'pending')
          LIMIT $2 FOR UPDATE SKIP LOCKED),
       gone AS (DELETE FROM callback_circuits c USING doomed WHERE c.merchant_id = doomed.merchant_id AND c.destination = doomed.destination RETURNING 1)
       SELECT count(*)::int AS circuits FROM gone`,
      [before, limit],
    );
    return row.circuits;
  }
}
