import { shanghaiDate } from '@app/recon';
import type { Credentials } from '@app/operator';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { books, completedOrder, createSellOrder } from './helpers/money-out';
import { processedRefund } from './helpers/recon';

interface Balance {
  available_fen: number;
  deposit_fen: number;
  as_of: number;
}

/** balanceQuery (SPEC 6): the balances now, the figures today's statement closes on. */
describe('balanceQuery (real PostgreSQL)', () => {
  let api: TestApi;
  let shop: Credentials;
  let channel: number;

  const balance = (merchant: Credentials) => post<Balance>(api.app, '/api/merchant/balanceQuery', signed(merchant));
  const closing = async (merchant: Credentials) =>
    (
      await post<{ closing_balance: { available_fen: number; deposit_fen: number } }>(
        api.app,
        '/api/merchant/statementQuery',
        signed(merchant, { date: shanghaiDate(new Date()) }),
      )
    ).body.data.closing_balance;

  beforeAll(async () => {
    api = await startTestApi();
    const made = await merchantWithChannels(api.operator, { depositRate: '0.1' });
    shop = made.merchant;
    channel = made.channels.processor;
  });
  afterAll(() => api?.close());

  it('answers zero for a merchant that has had no money yet', async () => {
    const before = Math.floor(Date.now() / 1000);
    const res = await balance((await merchantWithChannels(api.operator)).merchant);
    expect([res.status, res.body.code]).toEqual([200, 1]);
    expect(res.body.data).toEqual({ available_fen: 0, deposit_fen: 0, as_of: expect.any(Number) });
    expect(res.body.data.as_of).toBeGreaterThanOrEqual(before);
    expect(res.body.data.as_of).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
  });

  it("equals today's statement closing balance and the books after credits, a refund and a payout", async () => {
    const first = await completedOrder(api.app, shop, { cny_amount: '500.00', paychannel_id: channel });
    await completedOrder(api.app, shop, { cny_amount: '88.88', paychannel_id: channel });
    await processedRefund(api.app, shop, first.order_no, '12.34');
    expect((await createSellOrder(api.app, shop, { cny_amount: '50.00', paychannel_id: channel })).body.code).toBe(1);

    const now = (await balance(shop)).body.data;
    const { available, deposit } = await books(api.app, shop.id);
    expect(available).toBeGreaterThan(0);
    expect(deposit).toBeGreaterThan(0);
    expect({ available_fen: now.available_fen, deposit_fen: now.deposit_fen }).toEqual({ available_fen: available, deposit_fen: deposit });
    expect(await closing(shop)).toEqual({ available_fen: now.available_fen, deposit_fen: now.deposit_fen });
    expect(await api.operator.ledger.balance(shop.id)).toEqual({ available_fen: now.available_fen, deposit_fen: now.deposit_fen });
  });

  it("shows one merchant only its own balance, in the merchant's words for Chinese readers too", async () => {
    const other = (await merchantWithChannels(api.operator)).merchant;
    expect((await balance(other)).body.data).toMatchObject({ available_fen: 0, deposit_fen: 0 });
    const zh = await api.app.inject({
      method: 'POST',
      url: '/api/merchant/balanceQuery',
      headers: { 'content-type': 'application/json', 'accept-language': 'zh-CN' },
      payload: JSON.stringify(signed(shop)),
    });
    expect(zh.json()).toMatchObject({ code: 1, msg: '成功' });
  });
});
