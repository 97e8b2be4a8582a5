import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository, SelectQueryBuilder } from 'typeorm';
import { Channel, type MerchantMode, Order, type OrderStatus, unsettledOrderSql } from '../entities';
import { preparedQuery } from '../prepared-query';
import { onReplica } from '../replica';
import type { Move } from '../state-move';
import { type OrderListFilter, orderListQuery } from './order-list-query';
import { hydrate } from './transition.repository';

export type NewOrder = Omit<Order, 'id' | 'status' | 'payUrl' | 'channelTradeNo' | 'latePayment' | 'paidAt' | 'channelQueries' | 'updatedAt'>;

export type { OrderListFilter } from './order-list-query';

/** An orders row as RETURNING * gives it, turned into the entity as TypeORM would (bigint amounts as numbers, dates). */
function hydrateOrder(em: EntityManager, row: Record<string, unknown>): Order {
  return hydrate(em, Order, row);
}

/** What the sandbox checkout page checks before it shows or pays an order. */
export interface CheckoutOrder {
  order: Order;
  channel: Channel;
  merchantName: string;
  merchantMode: MerchantMode;
}

/** createOrder's row in one statement; plain SQL, as the query builder cost more CPU than the insert. */
const INSERT_ORDER = `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, payment_method, cny_fen, service_rate, service_fen,
                     deposit_rate, deposit_fen, merchant_actual_fen, merchant_order_no, notify_url, customer_name, request_hash,
                     pay_url, channel_trade_no, late_payment, paid_at, expires_at, created_at, updated_at, subject, return_url)
 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25) RETURNING id`;

/** The name of the unique constraint a PostgreSQL error violated, else null. */
export function uniqueViolation(err: unknown): string | null {
  const e = err as { code?: string; constraint?: string; driverError?: { code?: string; constraint?: string } } | null;
  const code = e?.driverError?.code ?? e?.code;
  if (code !== '23505') return null;
  return e?.driverError?.constraint ?? e?.constraint ?? '';
}

@Injectable()
export class OrderRepository {
  /** The prepared statements' texts, made from the entity metadata once. */
  private forChannelSql: string | undefined;
  private checkoutSql: string | undefined;

  constructor(@InjectRepository(Order) private readonly orders: Repository<Order>) {}

  /**
   * Inserts a pending order, with its payment when the channel already gave one, in one
   * statement; a unique violation (order_no, merchant_order_no) is thrown to the caller.
   */
  async insert(em: EntityManager, values: NewOrder, payment: { payUrl: string; channelTradeNo: string | null } | null = null): Promise<Order> {
    const order: Omit<Order, 'id'> = {
      ...values,
      status: 'pending',
      payUrl: payment?.payUrl ?? null,
      channelTradeNo: payment?.channelTradeNo ?? null,
      latePayment: false,
      paidAt: null,
      channelQueries: 0,
      updatedAt: values.createdAt,
    };
    const params = [
      order.orderNo,
      order.merchantId,
      order.channelId,
      order.orderType,
      order.status,
      order.paymentMethod,
      order.cnyFen,
      order.serviceRate,
      order.serviceFen,
      order.depositRate,
      order.depositFen,
      order.merchantActualFen,
      order.merchantOrderNo,
      order.notifyUrl,
      order.customerName,
      order.requestHash,
      order.payUrl,
      order.channelTradeNo,
      order.latePayment,
      order.paidAt,
      order.expiresAt,
      order.createdAt,
      order.updatedAt,
      order.subject,
      order.returnUrl,
    ];
    // createOrder's hot path, outside a transaction: a named prepared statement straight on the
    // pool, so each connection parses and plans it once and TypeORM's query runner is skipped.
    // In a transaction (the channel-failure path), on the transaction's connection.
    const rows: { id: string }[] = em.queryRunner
      ? await em.query(INSERT_ORDER, params)
      : await preparedQuery<{ id: string }>(em.connection, 'orders_insert', INSERT_ORDER, params);
    return { ...order, id: String(rows[0].id) };
  }

  findByOrderNo(merchantId: number, orderNo: string): Promise<Order | null> {
    return this.orders.findOneBy({ merchantId, orderNo });
  }

  findByMerchantOrderNo(merchantId: number, merchantOrderNo: string): Promise<Order | null> {
    return this.orders.findOneBy({ merchantId, merchantOrderNo });
  }

  /** For a channel's notification: the channel, not a merchant, vouches for the order number. A prepared statement: every paid order passes here. */
  async findForChannel(channelId: number, orderNo: string): Promise<Order | null> {
    const em = this.orders.manager;
    this.forChannelSql ??= `SELECT ${this.columns(Order, 'o')} FROM "orders" o WHERE o."order_no" = $1 AND o."channel_id" = $2`;
    const [row] = await preparedQuery<Record<string, unknown>>(em.connection, 'orders_for_channel', this.forChannelSql, [orderNo, channelId]);
    return row ? hydrateOrder(em, row) : null;
  }

  /** For the checkout pages, whose HMAC token stands in for the merchant. */
  findForCheckout(orderNo: string): Promise<Order | null> {
    return this.orders.findOneBy({ orderNo });
  }

  /**
   * The sandbox checkout's order with its channel and its merchant's name and mode, in one round
   * trip: the page and its Pay each need all three before anything else.
   */
  async findCheckout(orderNo: string): Promise<CheckoutOrder | null> {
    const em = this.orders.manager;
    // Prepared: the page and its Pay each run it, and planning the join cost more than running it.
    this.checkoutSql ??= `SELECT ${this.columns(Order, 'o')}, ${this.columns(Channel, 'c', 'channel.')}, m."name" AS "merchant.name", m."mode" AS "merchant.mode"
         FROM "orders" o JOIN "channels" c ON c."id" = o."channel_id" JOIN "merchants" m ON m."id" = o."merchant_id"
        WHERE o."order_no" = $1`;
    const [row] = await preparedQuery<Record<string, unknown>>(em.connection, 'orders_checkout', this.checkoutSql, [orderNo]);
    if (!row) return null;
    return {
      order: hydrateOrder(em, row),
      channel: hydrate(em, Channel, row, 'channel.'),
      merchantName: row['merchant.name'] as string,
      merchantMode: row['merchant.mode'] as MerchantMode,
    };
  }

  /** An entity's columns, named (a prepared statement's result type never changes with the table), as `prefix` + database name. */
  private columns(entity: typeof Order | typeof Channel, alias: string, prefix = ''): string {
    return this.orders.manager.connection
      .getMetadata(entity)
      .columns.map((c) => `${alias}."${c.databaseName}"${prefix ? ` AS "${prefix}${c.databaseName}"` : ''}`)
      .join(', ');
  }

  /** For the worker's jobs, which carry order ids only. */
  findById(id: string, em: EntityManager = this.orders.manager): Promise<Order | null> {
    return em.findOneBy(Order, { id });
  }

  /**
   * Newest first (created_at desc, order_no desc) with the exact total, in one statement whose
   * cost does not grow with the rows before the page or inside the window (orderListQuery).
   */
  async list(merchantId: number, filter: OrderListFilter): Promise<{ rows: Order[]; total: number }> {
    const { sql, params } = orderListQuery(merchantId, filter);
    // On the read replica when there is one (DATABASE_REPLICA_URL): a list may lag a moment behind a create.
    const raw: ({ list_total: string } & Record<string, unknown>)[] = await onReplica(this.orders.manager.connection, (em) => em.query(sql, params));
    const rows = raw.filter((r) => r.id !== null).map((r) => this.hydrate(r));
    return { rows, total: Number(raw[0].list_total) };
  }

  /**
   * Folds up to `limit` order_day_counts rows of days before yesterday (UTC) from their writers'
   * slots into slot 0, so a past day costs a total one row per key however many sessions wrote
   * it; totals are unchanged (one statement, one snapshot). Rows a writer holds are skipped, and
   * the fold gives up at once on a slot-0 row a writer holds: it never makes a writer wait long.
   * Returns the rows folded.
   */
  async foldPastDayCountSlots(limit: number): Promise<number> {
    return this.orders.manager.transaction(async (em) => {
      await em.query(`SET LOCAL lock_timeout = '100ms'`);
      try {
        const rows: unknown[] = await em.query(
          `WITH picked AS (
             SELECT merchant_id, day, status, order_type, slot FROM order_day_counts
              WHERE slot <> 0 AND day < (now() AT TIME ZONE 'UTC')::date - 1
              LIMIT $1 FOR UPDATE SKIP LOCKED),
           gone AS (
             DELETE FROM order_day_counts c USING picked p
              WHERE (c.merchant_id, c.day, c.status, c.order_type, c.slot) = (p.merchant_id, p.day, p.status, p.order_type, p.slot)
             RETURNING c.merchant_id, c.day, c.status, c.order_type, c.n),
           folded AS (
             INSERT INTO order_day_counts (merchant_id, day, status, order_type, slot, n)
             SELECT merchant_id, day, status, order_type, 0, sum(n) FROM gone GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
             ON CONFLICT (merchant_id, day, status, order_type, slot) DO UPDATE SET n = order_day_counts.n + EXCLUDED.n)
           SELECT 1 FROM gone`,
          [limit],
        );
        return rows.length;
      } catch (err) {
        // 55P03: a writer holds a slot-0 row; the next sweep folds it.
        if ((err as { driverError?: { code?: string } }).driverError?.code === '55P03') return 0;
        throw err;
      }
    });
  }

  /**
   * The next `limit` orders of the filtered list after `after` (same order as list), by keyset
   * on the list's index, so reading a whole list costs the same per row on the last batch as on
   * the first (the portal's CSV export).
   */
  listBatch(merchantId: number, filter: Omit<OrderListFilter, 'page'>, after: Pick<Order, 'createdAt' | 'orderNo'> | null): Promise<Order[]> {
    const query = this.filtered(merchantId, filter);
    if (after) query.andWhere('(o.createdAt, o.orderNo) < (:afterCreated, :afterNo)', { afterCreated: after.createdAt, afterNo: after.orderNo });
    // An export reads on the read replica when there is one.
    return onReplica(this.orders.manager.connection, (em) =>
      query.setQueryRunner(em.queryRunner!).orderBy('o.createdAt', 'DESC').addOrderBy('o.orderNo', 'DESC').limit(filter.limit).getMany(),
    );
  }

  /** Paid buy orders per day in Asia/Shanghai since `since`: the portal overview's chart. */
  async paidByDay(merchantId: number, since: Date): Promise<{ day: string; count: number; cnyFen: number }[]> {
    const rows: { day: string; count: number; fen: string }[] = await this.orders.query(
      `SELECT to_char("paid_at" AT TIME ZONE 'Asia/Shanghai', 'YYYY-MM-DD') AS "day", count(*)::int AS "count", sum("cny_fen")::text AS "fen"
         FROM "orders" WHERE "merchant_id" = $1 AND "paid_at" >= $2 AND "order_type" = 1
        GROUP BY 1 ORDER BY 1`,
      [merchantId, since],
    );
    return rows.map((r) => ({ day: r.day, count: r.count, cnyFen: Number(r.fen) }));
  }

  private filtered(merchantId: number, filter: Omit<OrderListFilter, 'page' | 'limit'>): SelectQueryBuilder<Order> {
    const query = this.orders.createQueryBuilder('o').where('o.merchantId = :merchantId', { merchantId });
    if (filter.status) query.andWhere('o.status = :status', { status: filter.status });
    if (filter.orderType !== undefined) query.andWhere('o.orderType = :orderType', { orderType: filter.orderType });
    if (filter.startTime !== undefined) query.andWhere('o.createdAt >= to_timestamp(:startTime)', { startTime: filter.startTime });
    // createtime is whole seconds: an inclusive end bound takes the whole of its last second.
    if (filter.endTime !== undefined) query.andWhere('o.createdAt < to_timestamp(:endBefore)', { endBefore: filter.endTime + 1 });
    return query;
  }

  /** A raw orders row as TypeORM would load it (column names, bigint and numeric as text, transformers). */
  private hydrate(raw: Record<string, unknown>): Order {
    const order = new Order();
    const { driver } = this.orders.manager.connection;
    for (const column of this.orders.metadata.columns) {
      (order as unknown as Record<string, unknown>)[column.propertyName] = driver.prepareHydratedValue(raw[column.databaseName], column);
    }
    return order;
  }

  /**
   * The merchant's order, locked until the transaction ends: refunds of one order are decided
   * one at a time (the sum of its refunds, one in progress).
   */
  async lockForRefund(em: EntityManager, merchantId: number, orderNo: string): Promise<Order | null> {
    const rows = await em.query<{ id: string }[]>(`SELECT "id" FROM "orders" WHERE "merchant_id" = $1 AND "order_no" = $2 FOR NO KEY UPDATE`, [
      merchantId,
      orderNo,
    ]);
    return rows.length === 0 ? null : em.findOneByOrFail(Order, { id: String(rows[0].id) });
  }

  /**
   * Up to `limit` orders the move applies to whose expires_at has passed, oldest first, locked
   * until the transaction ends. Rows another transaction holds are skipped (FOR UPDATE SKIP
   * LOCKED) and the transition re-checks the state, so concurrent passes never move one order twice.
   */
  async lockOverdue(em: EntityManager, move: Move<OrderStatus>, limit: number): Promise<Order[]> {
    // "status" = ANY: with the states known when planning, ix_orders_pending_expiry (partial, pending) serves the scan.
    const rows = await em.query<Record<string, unknown>[]>(
      `SELECT * FROM "orders"
        WHERE "status" = ANY($1::varchar[]) AND ("status", "order_type") IN (SELECT * FROM unnest($1::varchar[], $2::smallint[]))
          AND "expires_at" <= now()
        ORDER BY "expires_at" LIMIT $3 FOR UPDATE SKIP LOCKED`,
      [move.pairs.map((p) => p.from), move.pairs.map((p) => p.orderType), limit],
    );
    return rows.map((row) => hydrateOrder(em, row));
  }

  /** Buy orders paid (or confirmed) at least `olderThanSeconds` ago that have not completed; sell orders settle in their payout job. */
  async findStuckPaidIds(olderThanSeconds: number, limit: number): Promise<string[]> {
    const rows = await this.orders.query<{ id: string }[]>(
      `SELECT "id" FROM "orders" WHERE ${unsettledOrderSql()} AND "order_type" = 1 AND "updated_at" <= now() - make_interval(secs => $1)
       ORDER BY "updated_at" LIMIT $2`,
      [olderThanSeconds, limit],
    );
    return rows.map((r) => r.id);
  }
}
