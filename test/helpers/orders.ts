import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import type { Credentials } from '@app/operator';
import { type Answer, post, signed } from './api';

export interface CreatedOrder {
  order_no: string;
  merchant_order_no: string | null;
  status: string;
  order_type: number;
  cny_amount: string;
  payment_method: string | null;
  merchant_amount: string;
  deposit_amount: number;
  service_amount: number;
  merchant_actual_amount: number;
  createtime: number;
  pay_url: string | null;
  expires_at: number | null;
}

export function createOrder(app: NestFastifyApplication, merchant: Credentials, params: Record<string, unknown>): Promise<Answer<CreatedOrder>> {
  return post<CreatedOrder>(app, '/api/merchant/createOrder', signed(merchant, { order_type: 1, paychannel_paymethod: 'alipay', ...params }));
}

export function orderDetail(app: NestFastifyApplication, merchant: Credentials, orderNo: string): Promise<Answer<Record<string, unknown>>> {
  return post(app, '/api/merchant/orderQueryDetail', signed(merchant, { order_no: orderNo }));
}

/** Raw SQL on the test's database, for asserting rows the API does not show. */
export function sql(app: NestFastifyApplication): DataSource {
  return app.get(DataSource);
}

export async function orderRow(app: NestFastifyApplication, orderNo: string): Promise<Record<string, unknown>> {
  const [row] = await sql(app).query(`SELECT * FROM "orders" WHERE "order_no" = $1`, [orderNo]);
  return row;
}

/** An order's events in order, each with the deliveries written for it in the outbox (any status: without an address a delivery is written `no_address`, SPEC 7). */
export async function eventsOf(
  app: NestFastifyApplication,
  orderNo: string,
): Promise<{ type: string; payload: Record<string, unknown>; deliveries: number }[]> {
  return sql(app).query(
    `SELECT e."type", e."payload", (SELECT count(*)::int FROM "callback_deliveries" d WHERE d."event_id" = e."id") AS "deliveries"
     FROM "order_events" e JOIN "orders" o ON o."id" = e."order_id" WHERE o."order_no" = $1 ORDER BY e."seq"`,
    [orderNo],
  );
}
