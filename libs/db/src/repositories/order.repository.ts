import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { Order, type OrderStatus } from '../entities';
import { type OrderListFilter, orderListQuery } from './order-list-query';

export type NewOrder = Omit<Order, 'id' | 'status' | 'payUrl' | 'channelTradeNo' | 'latePayment' | 'paidAt' | 'updatedAt'>;

export type { OrderListFilter } from './order-list-query';

/** What a transition may set besides status and updated_at. */
export interface TransitionChanges {
  /** Sets paid_at to now() and, when the order was cancelled, late_payment to true. */
  paid?: boolean;
  channelTradeNo?: string | null;
}

/** The name of the unique constraint a PostgreSQL error violated, else null. */
export function uniqueViolation(err: unknown): string | null {
  const e = err as { code?: string; constraint?: string; driverError?: { code?: string; constraint?: string } } | null;
  const code = e?.driverError?.code ?? e?.code;
  if (code !== '23505') return null;
  return e?.driverError?.constraint ?? e?.constraint ?? '';
}

@Injectable()
export class OrderRepository {
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
      updatedAt: values.createdAt,
    };
    // Plain SQL: createOrder's hot path, where the query builder cost more CPU than the insert.
    const rows: { id: string }[] = await em.query(
      `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, payment_method, cny_fen, service_rate, service_fen,
                           deposit_rate, deposit_fen, merchant_actual_fen, merchant_order_no, notify_url, customer_name, request_hash,
                           pay_url, channel_trade_no, late_payment, paid_at, expires_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23) RETURNING id`,
      [
        order.orderNo, order.merchantId, order.channelId, order.orderType, order.status, order.paymentMethod, order.cnyFen, order.serviceRate,
        order.serviceFen, order.depositRate, order.depositFen, order.merchantActualFen, order.merchantOrderNo, order.notifyUrl, order.customerName,
        order.requestHash, order.payUrl, order.channelTradeNo, order.latePayment, order.paidAt, order.expiresAt, order.createdAt, order.updatedAt,
      ],
    );
    return { ...order, id: String(rows[0].id) };
  }

  findByOrderNo(merchantId: number, orderNo: string): Promise<Order | null> {
    return this.orders.findOneBy({ merchantId, orderNo });
  }

  findByMerchantOrderNo(merchantId: number, merchantOrderNo: string): Promise<Order | null> {
    return this.orders.findOneBy({ merchantId, merchantOrderNo });
  }

  /** For a channel's notification: the channel, not a merchant, vouches for the order number. */
  findForChannel(channelId: number, orderNo: string): Promise<Order | null> {
    return this.orders.findOneBy({ channelId, orderNo });
  }

  /** For the sandbox checkout page, whose HMAC token stands in for the merchant. */
  findForCheckout(orderNo: string): Promise<Order | null> {
    return this.orders.findOneBy({ orderNo });
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
    const raw: ({ list_total: string } & Record<string, unknown>)[] = await this.orders.query(sql, params);
    const rows = raw.filter((r) => r.id !== null).map((r) => this.hydrate(r));
    return { rows, total: Number(raw[0].list_total) };
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
   * The one way an order changes state: a single conditional UPDATE, so of two concurrent
   * callers exactly one sees the order; the other gets null and must change nothing.
   */
  async transition(em: EntityManager, id: string, from: OrderStatus | OrderStatus[], to: OrderStatus, changes: TransitionChanges = {}): Promise<Order | null> {
    const expected = Array.isArray(from) ? from : [from];
    const sets = [`"status" = $3`, `"updated_at" = GREATEST(now(), "created_at")`];
    const params: unknown[] = [id, expected, to];
    if (changes.paid) {
      // The SET list sees the row as it was: a cancelled order paid late is flagged.
      sets.push(`"paid_at" = now()`, `"late_payment" = "late_payment" OR "status" = 'cancelled'`);
    }
    if (changes.channelTradeNo) {
      params.push(changes.channelTradeNo);
      sets.push(`"channel_trade_no" = $${params.length}`);
    }
    const [rows] = await em.query<[{ id: string }[], number]>(
      `UPDATE "orders" SET ${sets.join(', ')} WHERE "id" = $1 AND "status" = ANY($2::varchar[]) RETURNING "id"`,
      params,
    );
    if (rows.length === 0) return null;
    return em.findOneByOrFail(Order, { id });
  }

  /** Pending orders whose time ran out (ix_orders_pending_expiry). */
  async findOverduePendingIds(limit: number): Promise<string[]> {
    const rows = await this.orders.query<{ id: string }[]>(
      `SELECT "id" FROM "orders" WHERE "status" = 'pending' AND "expires_at" <= now() ORDER BY "expires_at" LIMIT $1`,
      [limit],
    );
    return rows.map((r) => r.id);
  }

  /** Orders paid (or confirmed) at least `olderThanSeconds` ago that have not completed. */
  async findStuckPaidIds(olderThanSeconds: number, limit: number): Promise<string[]> {
    const rows = await this.orders.query<{ id: string }[]>(
      `SELECT "id" FROM "orders" WHERE "status" IN ('paid', 'confirmed') AND "updated_at" <= now() - make_interval(secs => $1)
       ORDER BY "updated_at" LIMIT $2`,
      [olderThanSeconds, limit],
    );
    return rows.map((r) => r.id);
  }
}
