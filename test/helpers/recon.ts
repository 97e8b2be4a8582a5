import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { OrderLifecycle, RefundLifecycle } from '@app/orders';
import { ReconService } from '@app/recon';
import type { AppConfig } from '@app/common';
import type { Credentials } from '@app/operator';
import { ReconCliModule } from '../../apps/cli/src/recon-commands';
import { createOrder, orderRow, sql } from './orders';
import { refundCreate, refundRow } from './money-out';

/** ReconService as recon:run builds it, on the test API's database and queue. */
export async function startRecon(config: AppConfig): Promise<{ recon: ReconService; context: INestApplicationContext }> {
  const context = await NestFactory.createApplicationContext(ReconCliModule.forRoot(config), { logger: false });
  return { recon: context.get(ReconService), context };
}

/** A top-up paid by pressing Pay on the sandbox page, then confirmed and credited as the worker would. */
export async function paidOnPage(
  app: NestFastifyApplication,
  merchant: Credentials,
  channelId: number,
  amount: string,
): Promise<{ orderNo: string; id: string }> {
  const orderNo = await pendingOrder(app, merchant, channelId, amount);
  const created = await orderRow(app, orderNo);
  const token = new URL(String(created.pay_url)).searchParams.get('token')!;
  const res = await app.inject({
    method: 'POST',
    url: `/sandbox/checkout/${orderNo}/pay`,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ token }).toString(),
  });
  if (res.statusCode !== 200) throw new Error(`the sandbox page answered ${res.statusCode}`);
  await app.get(OrderLifecycle).confirm(String(created.id));
  return { orderNo, id: String(created.id) };
}

export async function pendingOrder(app: NestFastifyApplication, merchant: Credentials, channelId: number, amount: string): Promise<string> {
  const res = await createOrder(app, merchant, { cny_amount: amount, paychannel_id: channelId });
  if (res.body.code !== 1) throw new Error(`createOrder answered ${JSON.stringify(res.body)}`);
  return res.body.data.order_no;
}

/** A refund created and processed by the worker's lifecycle: the sandbox gives it (or refuses .44). */
export async function processedRefund(app: NestFastifyApplication, merchant: Credentials, orderNo: string, amount: string): Promise<Record<string, unknown>> {
  const res = await refundCreate(app, merchant, {
    order_no: orderNo,
    refund_amount: amount,
    merchant_refund_no: `R${orderNo.slice(-10)}${amount.replace('.', '')}`,
  });
  if (res.body.code !== 1) throw new Error(`refundCreate answered ${JSON.stringify(res.body)}`);
  const row = await refundRow(app, res.body.data.refund_no);
  await app.get(RefundLifecycle).process(String(row.id));
  return refundRow(app, res.body.data.refund_no);
}

/** Injects a discrepancy into the sandbox's own books, as if the channel had done (or not done) it. */
export function sandboxBook(app: NestFastifyApplication, statement: string, params: unknown[]): Promise<unknown> {
  return sql(app).query(statement, params);
}

export async function creditsOf(app: NestFastifyApplication, orderNo: string): Promise<number> {
  const [row] = await sql(app).query<{ n: number }[]>(
    `SELECT count(*)::int AS n FROM "ledger_entries" l JOIN "orders" o ON o."id" = l."order_id" WHERE o."order_no" = $1 AND l."kind" = 'order_credit'`,
    [orderNo],
  );
  return row.n;
}
