import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { orderHeadSql } from '../sql/callback-functions';
import type { DeliveryHead } from './callback-attempt.repository';

/** The maintenance sweep's reads and writes on callback deliveries: the safety net that reconciles rows and jobs. */
@Injectable()
export class CallbackSweepRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Pending deliveries first in their order whose attempt is more than `graceMs` overdue: their
   * job may be gone (Redis emptied, an add after commit failed) or parked without its key's line
   * knowing it. Each is pushed `graceMs` on in the same statement, so the next sweep moves on to
   * others while these are looked at.
   */
  async takeOverdue(graceMs: number, limit: number): Promise<DeliveryHead[]> {
    return this.dataSource.query(
      `WITH taken AS (
         UPDATE callback_deliveries d SET next_attempt_at = now() + $1 * interval '1 millisecond'
          WHERE d.id IN (SELECT x.id FROM callback_deliveries x
                          WHERE x.status = 'pending' AND x.next_attempt_at < now() - $1 * interval '1 millisecond' AND ${orderHeadSql('x')}
                          ORDER BY x.next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING d.id, d.merchant_id AS "merchantId", d.notify_url AS "notifyUrl")
       SELECT * FROM taken`,
      [graceMs, limit],
    );
  }

  /**
   * The sweep's fold of callback_delivery_counts: the rows it can see become one per status (a
   * status whose changes cancel out leaves none). Rows appended meanwhile are left for the next
   * fold; two folds at once delete each row once. Answers how many rows it folded.
   */
  async foldStatusCounts(): Promise<number> {
    const [row]: { folded: number }[] = await this.dataSource.query(
      `WITH gone AS (DELETE FROM callback_delivery_counts RETURNING status, n),
            kept AS (INSERT INTO callback_delivery_counts (status, n) SELECT status, sum(n) FROM gone GROUP BY status HAVING sum(n) <> 0)
       SELECT count(*)::int AS folded FROM gone`,
    );
    return row.folded;
  }
}
