import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Credentials } from '@app/operator';
import { OrderLifecycle } from '@app/orders';
import { type Answer, post, signed } from './api';
import { type CreatedOrder, createOrder, orderRow, sql } from './orders';

export interface RefundAnswer {
  refund_no: string;
  merchant_refund_no: string;
  order_no: string;
  refund_amount: string;
  status: 'processing' | 'succeeded' | 'failed';
  reason: string | null;
  createtime: number;
  updatetime: number;
}

export const REFUND_FIELDS = ['createtime', 'merchant_refund_no', 'order_no', 'reason', 'refund_amount', 'refund_no', 'status', 'updatetime'];

export interface SellOrderAnswer extends CreatedOrder {
  payee_name: string;
  payee_bank: string;
  payee_account: string;
}

/** A top-up paid through the real lifecycle as a final notification settles it: completed, its merchant credited. */
export async function completedOrder(
  app: NestFastifyApplication,
  merchant: Credentials,
  params: Record<string, unknown>,
): Promise<CreatedOrder & { id: string }> {
  const res = await createOrder(app, merchant, params);
  if (res.body.code !== 1) throw new Error(`createOrder answered ${JSON.stringify(res.body)}`);
  const row = await orderRow(app, res.body.data.order_no);
  const lifecycle = app.get(OrderLifecycle);
  const id = row.id as string;
  if ((await lifecycle.markPaid(id, { amountFen: Number(row.cny_fen), channelTradeNo: `T${res.body.data.order_no}` }, { final: true })) !== 'paid')
    throw new Error('not paid');
  return { ...res.body.data, id };
}

export function refundCreate(app: NestFastifyApplication, merchant: Credentials, params: Record<string, unknown>): Promise<Answer<RefundAnswer>> {
  return post<RefundAnswer>(app, '/api/merchant/refundCreate', signed(merchant, params));
}

export function refundQuery(app: NestFastifyApplication, merchant: Credentials, params: Record<string, unknown>): Promise<Answer<RefundAnswer>> {
  return post<RefundAnswer>(app, '/api/merchant/refundQuery', signed(merchant, params));
}

export function refundQueryList(app: NestFastifyApplication, merchant: Credentials, orderNo: string): Promise<Answer<{ list: RefundAnswer[]; total: number }>> {
  return post(app, '/api/merchant/refundQueryList', signed(merchant, { order_no: orderNo }));
}

export function createSellOrder(app: NestFastifyApplication, merchant: Credentials, params: Record<string, unknown>): Promise<Answer<SellOrderAnswer>> {
  return post<SellOrderAnswer>(
    app,
    '/api/merchant/createSellOrder',
    signed(merchant, { payee_name: '张三', payee_account: '6222021234561234', payee_bank: '中国工商银行', ...params }),
  );
}

export function orderClose(app: NestFastifyApplication, merchant: Credentials, orderNo: string): Promise<Answer<Record<string, unknown>>> {
  return post(app, '/api/merchant/orderClose', signed(merchant, { order_no: orderNo }));
}

/** The merchant's balance row and the sum of its ledger entries per balance, read together. */
export async function books(
  app: NestFastifyApplication,
  merchantId: number,
): Promise<{ available: number; deposit: number; ledgerAvailable: number; ledgerDeposit: number }> {
  const [row] = await sql(app).query(
    `SELECT COALESCE((SELECT available_fen FROM balances WHERE merchant_id = $1), 0)::int AS available,
            COALESCE((SELECT deposit_fen FROM balances WHERE merchant_id = $1), 0)::int AS deposit,
            COALESCE((SELECT sum(amount_fen) FROM ledger_entries WHERE merchant_id = $1 AND kind <> 'order_deposit'), 0)::int AS "ledgerAvailable",
            COALESCE((SELECT sum(amount_fen) FROM ledger_entries WHERE merchant_id = $1 AND kind = 'order_deposit'), 0)::int AS "ledgerDeposit"`,
    [merchantId],
  );
  return row;
}

/** The ledger entries of one order (its refunds' included), oldest first. */
export async function entriesOf(app: NestFastifyApplication, orderNo: string): Promise<{ kind: string; amount_fen: number; refund_no: string | null }[]> {
  return sql(app).query(
    `SELECT l.kind, l.amount_fen::int AS amount_fen, r.refund_no FROM ledger_entries l JOIN orders o ON o.id = l.order_id LEFT JOIN refunds r ON r.id = l.refund_id
      WHERE o.order_no = $1 ORDER BY l.id`,
    [orderNo],
  );
}

export async function refundRow(app: NestFastifyApplication, refundNo: string): Promise<Record<string, unknown>> {
  const [row] = await sql(app).query(`SELECT * FROM refunds WHERE refund_no = $1`, [refundNo]);
  return row;
}
