import type { Client } from 'pg';

export interface AgedOrders {
  merchantId: number;
  channelId: number;
  /** Order numbers firstNo .. firstNo + count - 1 (as 22 digits): the caller keeps them unique. */
  firstNo: number;
  count: number;
  ageDays: number;
  orderType?: 1 | 2;
  orderStatus?: string;
}

/** `count` orders created, paid and last updated `ageDays` ago, in one statement (retention's fixtures). Answers their ids. */
export async function insertAgedOrders(db: Client, o: AgedOrders): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, cny_fen, service_rate, service_fen, deposit_rate, deposit_fen, merchant_actual_fen,
                         request_hash, paid_at, expires_at, created_at, updated_at)
     SELECT lpad((9000000000 + g)::text, 22, '0'), $1, $2, $6, $7, 1000, 0, 0, 0, 0, 1000, 'h',
            now() - make_interval(days => $3), now() - make_interval(days => $3), now() - make_interval(days => $3), now() - make_interval(days => $3)
       FROM generate_series($4::int, $5::int) g
     RETURNING id`,
    [o.merchantId, o.channelId, o.ageDays, o.firstNo, o.firstNo + o.count - 1, o.orderType ?? 1, o.orderStatus ?? 'completed'],
  );
  return rows.map((r) => r.id);
}
