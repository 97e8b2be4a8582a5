import { Client } from 'pg';
import { ORDER_COUNTER_TABLES, ORDER_COUNT_SLOTS } from '@app/db/sql/order-counts-apply';

/**
 * Bulk orders for one merchant, in one INSERT ... SELECT generate_series: createtime spread
 * over the year before now, statuses in a realistic mix (70% completed, 15% cancelled, 10%
 * pending, 5% paid), order_no unique (the row number in its last 8 digits). `from` lets a
 * second call grow the same merchant's table (100,000 -> 1,000,000). The counters end with every
 * key spread over all their slots, the most rows a total can have to sum.
 */
export async function seedOrders(databaseUrl: string, merchantId: number, channelId: number, from: number, to: number): Promise<number> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  const started = Date.now();
  try {
    await db.query(
      `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, payment_method, cny_fen, service_rate, service_fen, deposit_rate,
                           deposit_fen, merchant_actual_fen, request_hash, paid_at, expires_at, created_at, updated_at)
       SELECT to_char(t.at AT TIME ZONE 'Asia/Shanghai', 'YYYYMMDDHH24MISS') || lpad(t.i::text, 8, '0'), $1, $2, 1 + (t.i % 10 = 0)::int,
              CASE WHEN t.r < 70 THEN 'completed' WHEN t.r < 85 THEN 'cancelled' WHEN t.r < 95 THEN 'pending' ELSE 'paid' END,
              -- A sell order (every tenth) debits cny + service, as the amounts CHECK wants.
              'alipay', 10000, 0.006, 60, 0, 0, CASE WHEN t.i % 10 = 0 THEN 10060 ELSE 9940 END, repeat('x', 64),
              CASE WHEN t.r < 70 OR t.r >= 95 THEN t.at + interval '1 minute' END, t.at + interval '30 minutes', t.at, t.at
       FROM (SELECT i, (i * 7919) % 100 AS r, now() - (((i * 104729) % 31536000) || ' seconds')::interval AS at FROM generate_series($3::bigint, $4::bigint - 1) AS i) AS t`,
      [merchantId, channelId, from, to],
    );
    // The INSERT above went through the statement triggers, so order_counts and order_day_counts already hold these rows,
    // all in this session's slot. Reads meet the worst case instead: every key spread over every slot, as many writing
    // sessions leave it. Totals are unchanged (each key's n split into ORDER_COUNT_SLOTS parts).
    for (const { table, key } of ORDER_COUNTER_TABLES) {
      const columns = key.join(', ');
      await db.query(
        `WITH gone AS (DELETE FROM ${table} WHERE merchant_id = $1 RETURNING ${columns}, n)
         INSERT INTO ${table} (${columns}, slot, n)
         SELECT ${columns}, s, sum(n)::bigint / $2::int + (s < sum(n)::bigint % $2::int)::int FROM gone, generate_series(0, $2::int - 1) s GROUP BY ${columns}, s`,
        [merchantId, ORDER_COUNT_SLOTS],
      );
    }
    // As autovacuum would leave tables this size: statistics, and the visibility map index-only scans rely on.
    await db.query('VACUUM ANALYZE orders, order_counts, order_day_counts');
    return Date.now() - started;
  } finally {
    await db.end();
  }
}
