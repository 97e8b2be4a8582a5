import { OrderLifecycle } from '@app/orders';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { createOrder, sql } from './helpers/orders';

/** orderQueryList's total without a time bound comes from order_counts, kept by triggers: it must always equal a real count. */
describe('order counts behind orderQueryList totals', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(() => api.close());

  it('agree with the orders table through creation, payment, cancellation, completion and sell orders', async () => {
    const { merchant, channels } = await merchantWithChannels(api.operator);
    const other = await merchantWithChannels(api.operator);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await createOrder(api.app, merchant, { order_type: 1, cny_amount: `${i + 1}.00`, paychannel_id: channels.remotepay, paychannel_paymethod: 'alipay' });
      expect(res.body.code).toBe(1);
      ids.push(String((await sql(api.app).query('SELECT id FROM orders WHERE order_no = $1', [res.body.data.order_no]))[0].id));
    }
    await createOrder(api.app, other.merchant, { order_type: 1, cny_amount: '1.00', paychannel_id: other.channels.remotepay, paychannel_paymethod: 'alipay' });
    const lifecycle = api.app.get(OrderLifecycle);
    // Concurrent transitions of different orders touch the same counter rows.
    await Promise.all([
      ...ids.slice(0, 5).map((id, i) => lifecycle.markPaid(id, { amountFen: (i + 1) * 100, channelTradeNo: null })),
      ...ids.slice(5, 8).map((id) => lifecycle.markFailed(id)),
    ]);
    await Promise.all(ids.slice(0, 3).map((id) => lifecycle.confirm(id)));
    // A late payment of a cancelled order moves it from cancelled to paid.
    expect(await lifecycle.markPaid(ids[5], { amountFen: 600, channelTradeNo: null })).toBe('late_paid');
    // Sell orders exist in the data model and in queries.
    await sql(api.app).query(
      `INSERT INTO orders (order_no, merchant_id, channel_id, order_type, status, cny_fen, service_rate, service_fen, deposit_rate, deposit_fen,
                           merchant_actual_fen, request_hash, expires_at, created_at, updated_at)
       SELECT '9' || lpad(g::text, 21, '0'), $1, $2, 2, 'completed', 100, 0, 0, 0, 0, 100, 'x', now(), now(), now() FROM generate_series(1, 4) g`,
      [merchant.id, channels.remotepay],
    );

    const counts = async (filter: Record<string, unknown>) =>
      (await post<{ total: number }>(api.app, '/api/merchant/orderQueryList', signed(merchant, filter))).body.data.total;
    const actual = async (where: string, args: unknown[]) =>
      Number((await sql(api.app).query(`SELECT count(*) AS n FROM orders WHERE merchant_id = $1 ${where}`, [merchant.id, ...args]))[0].n);

    expect(await counts({})).toBe(16);
    expect(await counts({})).toBe(await actual('', []));
    for (const status of ['pending', 'paid', 'confirmed', 'completed', 'cancelled']) {
      expect([status, await counts({ status })]).toEqual([status, await actual('AND status = $2', [status])]);
    }
    expect(await counts({ order_type: 2 })).toBe(4);
    expect(await counts({ order_type: 1, status: 'completed' })).toBe(3);
    expect(await counts({ status: 'paid' })).toBe(3);
    expect(await counts({ status: 'cancelled' })).toBe(2);
    // The whole table agrees, every merchant and group.
    const drift = await sql(api.app).query(
      `SELECT * FROM (SELECT merchant_id, status, order_type, count(*) AS n FROM orders GROUP BY 1, 2, 3) o
        FULL JOIN order_counts c USING (merchant_id, status, order_type) WHERE coalesce(o.n, 0) <> coalesce(c.n, 0)`,
    );
    expect(drift).toEqual([]);
  });

  it('answers a page past the end with an empty list and the real total', async () => {
    const { merchant, channels } = await merchantWithChannels(api.operator);
    await createOrder(api.app, merchant, { order_type: 1, cny_amount: '1.00', paychannel_id: channels.remotepay, paychannel_paymethod: 'alipay' });
    const res = await post<{ list: unknown[]; total: number; page: number }>(api.app, '/api/merchant/orderQueryList', signed(merchant, { page: 3, limit: 1 }));
    expect(res.body.data).toMatchObject({ list: [], total: 1, page: 3 });
  });
});
