import { randomInt } from 'node:crypto';
import { DataSource } from 'typeorm';
import { type Move, type OrderStatus, OrderRepository } from '@app/db';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';

/**
 * OrderRepository.transitionBy against PostgreSQL (it replaces a spec that pinned the UPDATE's text
 * against a fake EntityManager): a move matches only its (state, order type) pairs, so a payment
 * notification never pays a sell order, and a sell order's refusal never cancels a pay-in order.
 */
describe('OrderRepository.transitionBy (real PostgreSQL)', () => {
  const NOTIFICATION: Move<OrderStatus> = {
    from: ['pending', 'cancelled'],
    to: 'paid',
    pairs: [
      { from: 'pending', orderType: 1 },
      { from: 'cancelled', orderType: 1 },
    ],
  };
  const REFUSAL: Move<OrderStatus> = { from: ['pending'], to: 'cancelled', pairs: [{ from: 'pending', orderType: 2 }] };

  let api: TestApi;
  let db: DataSource;
  let orders: OrderRepository;
  let merchantId: number;
  let channelId: number;

  beforeAll(async () => {
    api = await startTestApi();
    db = api.app.get(DataSource);
    orders = api.app.get(OrderRepository);
    const { merchant, channels } = await merchantWithChannels(api.operator);
    merchantId = merchant.id;
    channelId = channels.remotepay;
  });
  afterAll(() => api.close());

  /** A pay-in order (type 1) or a sell order (type 2) in `status`, as the lifecycles leave them. */
  async function order(orderType: 1 | 2, status: OrderStatus): Promise<string> {
    const orderNo = `20251121120000${String(randomInt(0, 99_999_999)).padStart(8, '0')}`;
    const [deposit, actual] = orderType === 1 ? [0, 9940] : [0, 10060];
    const rows = await db.query<{ id: string }[]>(
      `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, payment_method, cny_fen, service_rate, service_fen, deposit_rate,
                           deposit_fen, merchant_actual_fen, merchant_order_no, request_hash, expires_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, 'alipay', 10000, 0.006, 60, 0, $6, $7, $8, $9, now() + interval '1 hour', now(), now()) RETURNING id`,
      [orderNo, merchantId, channelId, orderType, status, deposit, actual, `M-${orderNo.slice(-8)}`, 'x'.repeat(64)],
    );
    return String(rows[0].id);
  }

  async function row(id: string): Promise<{ status: string; paid_at: Date | null; late_payment: boolean; channel_trade_no: string | null }> {
    return (await db.query(`SELECT status, paid_at, late_payment, channel_trade_no FROM orders WHERE id = $1`, [id]))[0];
  }

  it('a notification pays a pending pay-in order, and a cancelled one as a late payment', async () => {
    const pending = await order(1, 'pending');
    const cancelled = await order(1, 'cancelled');
    expect(await orders.transitionBy(db.manager, pending, NOTIFICATION, { paid: true, channelTradeNo: 'T-1' })).toMatchObject({ status: 'paid' });
    expect(await row(pending)).toMatchObject({ status: 'paid', paid_at: expect.any(Date), late_payment: false, channel_trade_no: 'T-1' });
    expect(await orders.transitionBy(db.manager, cancelled, NOTIFICATION, { paid: true })).toMatchObject({ status: 'paid' });
    expect(await row(cancelled)).toMatchObject({ status: 'paid', late_payment: true });
  });

  it('a notification never pays a sell order, whatever its state: null, and the row unchanged', async () => {
    for (const status of ['pending', 'cancelled'] as const) {
      const sell = await order(2, status);
      expect(await orders.transitionBy(db.manager, sell, NOTIFICATION, { paid: true, channelTradeNo: 'T-2' })).toBeNull();
      expect(await row(sell)).toEqual({ status, paid_at: null, late_payment: false, channel_trade_no: null });
    }
  });

  it("a sell order's refusal cancels a pending sell order, never a pending pay-in order", async () => {
    const sell = await order(2, 'pending');
    const payIn = await order(1, 'pending');
    expect(await orders.transitionBy(db.manager, sell, REFUSAL)).toMatchObject({ status: 'cancelled' });
    expect(await orders.transitionBy(db.manager, payIn, REFUSAL)).toBeNull();
    expect((await row(sell)).status).toBe('cancelled');
    expect((await row(payIn)).status).toBe('pending');
  });

  it('a move from a state the row is not in changes nothing', async () => {
    const paid = await order(1, 'paid');
    expect(await orders.transitionBy(db.manager, paid, NOTIFICATION, { paid: true })).toBeNull();
    expect(await row(paid)).toMatchObject({ status: 'paid', paid_at: null });
  });
});
