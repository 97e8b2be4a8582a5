import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';

/** The callback figures the gauges read (/metrics of the API and the workers): each an index probe or a small sum, never a scan of the deliveries. */
@Injectable()
export class CallbackFiguresRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** For the gauges: keys whose circuit is open, and the pending deliveries they hold back. */
  async circuitFigures(): Promise<{ openCircuits: number; heldDeliveries: number }> {
    const [row]: { open: number; held: number }[] = await this.dataSource.query(
      `SELECT (SELECT count(*)::int FROM callback_circuits WHERE open_since IS NOT NULL) AS open,
              (SELECT count(*)::int FROM callback_circuits c JOIN callback_deliveries d ON d.merchant_id = c.merchant_id AND d.destination = c.destination
                WHERE c.open_since IS NOT NULL AND d.status = 'pending') AS held`,
    );
    return { openCircuits: row.open, heldDeliveries: row.held };
  }
  /**
   * Deliveries by status, for the merchant_pay_callback_deliveries gauge: a sum over the slots of
   * callback_delivery_counts (the changes appended since the sweep last folded them), never a count over the deliveries.
   */
  async statusCounts(): Promise<Record<string, number>> {
    const rows: { status: string; count: string }[] = await this.dataSource.query(
      'SELECT status, sum(n) AS count FROM callback_delivery_counts GROUP BY status',
    );
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.count)]));
  }
  /** Circuits open now: one row per destination, counted at each scrape so the figure is never stale. */
  async openCircuitCount(): Promise<number> {
    const [row]: { open: number }[] = await this.dataSource.query(`SELECT count(*)::int AS open FROM callback_circuits WHERE open_since IS NOT NULL`);
    return row.open;
  }
  /** Seconds since the oldest due pending delivery was due (0 when none is): min() on ix_deliveries_due, one index probe. */
  async deliveryLagSeconds(): Promise<number> {
    const [row]: { lag: number | null }[] = await this.dataSource.query(
      `SELECT extract(epoch FROM now() - min(next_attempt_at))::float8 AS lag FROM callback_deliveries WHERE status = 'pending' AND next_attempt_at <= now()`,
    );
    return Math.max(0, row.lag ?? 0);
  }
}
