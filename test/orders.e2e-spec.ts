import { Logger } from '@nestjs/common';
import type { Credentials } from '@app/operator';
import { type Answer, type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { createOrder, orderDetail, orderRow, sql } from './helpers/orders';

const CREATED_FIELDS = [
  'cny_amount',
  'createtime',
  'deposit_amount',
  'expires_at',
  'merchant_actual_amount',
  'merchant_amount',
  'merchant_order_no',
  'order_no',
  'order_type',
  'pay_url',
  'payment_method',
  'service_amount',
  'status',
].sort();
const ORDER_FIELDS = [
  'cny_amount',
  'createtime',
  'merchant_actual_amount',
  'merchant_order_no',
  'order_no',
  'order_type',
  'service_amount',
  'service_rate',
  'status',
  'updatetime',
].sort();

describe('createOrder, orderQueryList, orderQueryDetail (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let merchant: Credentials;
  let channel: number;

  beforeAll(async () => {
    api = await startTestApi();
    const made = await merchantWithChannels(api.operator, { rate: '0.006' });
    merchant = made.merchant;
    channel = made.channels.remotepay;
  });
  afterAll(() => api.close());

  describe('amounts', () => {
    it('100.00 @ 0.006: service 60, merchant "99.40", actual 9940; every field of the interface', async () => {
      const res = await createOrder(api.app, merchant, { cny_amount: '100.00', paychannel_id: channel, customer_name: 'Li Lei' });
      expect([res.status, res.body.code]).toEqual([200, 1]);
      expect(res.body.msg).toMatch(/created/i);
      const o = res.body.data;
      expect(Object.keys(o).sort()).toEqual(CREATED_FIELDS);
      expect(o).toMatchObject({
        status: 'pending',
        order_type: 1,
        cny_amount: '100.00',
        payment_method: 'alipay',
        merchant_amount: '99.40',
        deposit_amount: 0,
        service_amount: 60,
        merchant_actual_amount: 9940,
        merchant_order_no: null,
      });
      expect(o.order_no).toMatch(/^\d{22}$/);
      expect(o.pay_url).toMatch(new RegExp(`^${api.config.publicBaseUrl}/sandbox/checkout/${o.order_no}\\?token=[0-9a-f]{64}$`));
      expect(Math.abs(o.createtime - Date.now() / 1000)).toBeLessThan(5);
      // SPEC 5: expires_at is Unix seconds, ORDER_EXPIRE_SECONDS (1800 by default) after creation.
      expect(o.expires_at! - o.createtime).toBeGreaterThanOrEqual(1799);
      expect(o.expires_at! - o.createtime).toBeLessThanOrEqual(1800);
      const row = await orderRow(api.app, o.order_no);
      expect(row).toMatchObject({ service_rate: '0.00600000', cny_fen: '10000', service_fen: '60', merchant_actual_fen: '9940', customer_name: 'Li Lei' });
    });

    it('order_no is yyyyMMddHHmmss in Asia/Shanghai plus 8 digits', async () => {
      const before = new Date(Date.now() + 8 * 3600_000).toISOString().slice(0, 16).replace(/[-T:]/g, '');
      const res = await createOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: channel });
      expect(res.body.data.order_no.slice(0, 12) >= before).toBe(true);
      expect(res.body.data.order_no.slice(0, 12) <= new Date(Date.now() + 8 * 3600_000 + 60_000).toISOString().slice(0, 16).replace(/[-T:]/g, '')).toBe(true);
    });

    it.each([
      ['0.83', '0.006', 0, '0.83', 83],
      ['0.84', '0.006', 1, '0.83', 83],
      ['1.00', '0.005', 1, '0.99', 99],
      ['0.01', '0.006', 0, '0.01', 1],
      ['1000000.00', '0.006', 600000, '994000.00', 99400000],
      ['12345.67', '0.0125', 15432, '12191.35', 1219135],
    ])('%s @ %s -> service %i, merchant %s, actual %i', async (amount, rate, service, merchantAmount, actual) => {
      const { merchant: m, channels } = await merchantWithChannels(api.operator, { rate });
      const res = await createOrder(api.app, m, { cny_amount: amount, paychannel_id: channels.processor });
      expect(res.body.code).toBe(1);
      expect(res.body.data).toMatchObject({ service_amount: service, merchant_amount: merchantAmount, merchant_actual_amount: actual, deposit_amount: 0 });
    });

    it('accepts a JSON number amount and digit strings for integers', async () => {
      const res = await createOrder(api.app, merchant, { cny_amount: 100.5, order_type: '1', paychannel_id: String(channel) });
      expect(res.body.code).toBe(1);
      expect(res.body.data).toMatchObject({ cny_amount: '100.50', service_amount: 60, merchant_amount: '99.90' });
    });

    it('a deposit rate: 100.00 @ 0.006 with deposit 0.1 -> deposit 994, actual 8946', async () => {
      const { merchant: m, channels } = await merchantWithChannels(api.operator, { rate: '0.006', depositRate: '0.1' });
      const res = await createOrder(api.app, m, { cny_amount: '100.00', paychannel_id: channels.warehouse });
      expect(res.body.data).toMatchObject({ service_amount: 60, merchant_amount: '99.40', deposit_amount: 994, merchant_actual_amount: 8946 });
    });

    it("uses the link's own rate over the channel's default", async () => {
      const { merchant: m, channels } = await merchantWithChannels(api.operator, { rate: '0.006' });
      await api.operator.channels.link(m.id, channels.processor, '0.01');
      const res = await createOrder(api.app, m, { cny_amount: '100.00', paychannel_id: channels.processor });
      expect(res.body.data.service_amount).toBe(100);
      const detail = await orderDetail(api.app, m, res.body.data.order_no);
      expect(detail.body.data.service_rate).toBe('0.01000000');
    });
  });

  describe('validation', () => {
    it.each([
      ['order_type', { order_type: 2 }],
      ['order_type', { order_type: 'buy' }],
      ['order_type', { order_type: undefined }],
      ['cny_amount', { cny_amount: undefined }],
      ['cny_amount', { cny_amount: '0' }],
      ['cny_amount', { cny_amount: '0.00' }],
      ['cny_amount', { cny_amount: '-1.00' }],
      ['cny_amount', { cny_amount: '1.234' }],
      ['cny_amount', { cny_amount: '12345678901.00' }],
      ['cny_amount', { cny_amount: '1e3' }],
      ['cny_amount', { cny_amount: ' 1.00' }],
      ['cny_amount', { cny_amount: 0.1 + 0.2 }],
      ['cny_amount', { cny_amount: true }],
      ['paychannel_id', { paychannel_id: undefined }],
      ['paychannel_id', { paychannel_id: 'one' }],
      ['paychannel_id', { paychannel_id: 0 }],
      ['paychannel_id', { paychannel_id: 1.5 }],
      ['paychannel_paymethod', { paychannel_paymethod: undefined }],
      ['paychannel_paymethod', { paychannel_paymethod: 'paypal' }],
      ['customer_name', { customer_name: 'x'.repeat(65) }],
      ['customer_name', { customer_name: 12 }],
      ['notify_url', { notify_url: 'ftp://shop.example/notify' }],
      ['notify_url', { notify_url: 'not a url' }],
      ['notify_url', { notify_url: `https://shop.example/${'a'.repeat(500)}` }],
      ['merchant_order_no', { merchant_order_no: 'has space' }],
      ['merchant_order_no', { merchant_order_no: 'x'.repeat(65) }],
      ['subject', { subject: '商'.repeat(129) }],
      ['subject', { subject: 'line\nbreak' }],
      ['subject', { subject: 'tab\there' }],
      ['subject', { subject: 12 }],
      ['return_url', { return_url: 'shop.example/back' }],
      ['return_url', { return_url: 'javascript:alert(1)' }],
      ['return_url', { return_url: 'https://user:pw@shop.example/back' }],
      ['return_url', { return_url: `https://shop.example/${'a'.repeat(500)}` }],
    ])('answers 40000 naming %s for %p', async (field, change) => {
      const params: Record<string, unknown> = { cny_amount: '10.00', paychannel_id: channel, order_type: 1, paychannel_paymethod: 'alipay', ...change };
      for (const key of Object.keys(params)) if (params[key] === undefined) delete params[key];
      const res = await post(api.app, '/api/merchant/createOrder', signed(merchant, params));
      expect([res.status, res.body.code]).toEqual([400, 40000]);
      expect((res.body.data as { errors: { field: string }[] }).errors.map((e) => e.field)).toEqual([field]);
    });

    it('says a missing field is required, a wrong type what type, and names the field once', async () => {
      const base: Record<string, unknown> = { cny_amount: '10.00', paychannel_id: channel, order_type: 1, paychannel_paymethod: 'alipay' };
      const answer = async (change: Record<string, unknown>) => {
        const params: Record<string, unknown> = { ...base, ...change };
        for (const key of Object.keys(params)) if (params[key] === undefined) delete params[key];
        return (await post<{ errors: { field: string; message: string }[] }>(api.app, '/api/merchant/createOrder', signed(merchant, params))).body;
      };
      expect((await answer({ paychannel_id: undefined })).msg).toBe('paychannel_id is required');
      expect((await answer({ cny_amount: undefined })).msg).toBe('cny_amount is required');
      expect((await answer({ paychannel_id: 'one' })).msg).toBe('paychannel_id must be an integer');
      expect((await answer({ paychannel_id: 0 })).msg).toBe('paychannel_id must be at least 1');
      const amount = await answer({ cny_amount: '1.234' });
      expect(amount.msg).toMatch(/^cny_amount must be a yuan amount/);
      expect(amount.data.errors).toEqual([{ field: 'cny_amount', message: amount.msg }]);
      const closed = await post(api.app, '/api/merchant/orderClose', signed(merchant, {}));
      expect([closed.body.code, closed.body.msg]).toEqual([40000, 'order_no is required']);
      // A rule's own message without the field's name gets it once, in front.
      const window = await post(api.app, '/api/merchant/orderQueryList', signed(merchant, { start_time: 200, end_time: 100 }));
      expect(window.body.msg).toBe('start_time: must not be after end_time');
    });

    it('names every bad field at once', async () => {
      const res = await post(api.app, '/api/merchant/createOrder', signed(merchant, { order_type: 3, cny_amount: 'x', paychannel_paymethod: 'alipay' }));
      expect(res.body.code).toBe(40000);
      expect((res.body.data as { errors: { field: string }[] }).errors.map((e) => e.field).sort()).toEqual(['cny_amount', 'order_type', 'paychannel_id']);
    });

    it("enforces the channel's min and max with 40000", async () => {
      const { id } = await api.operator.channels.create({
        category: 'processor',
        name: 'small',
        payMethod: 'alipay',
        adapter: 'sandbox',
        min: '1.00',
        max: '10.00',
      });
      await api.operator.channels.link(merchant.id, id);
      for (const amount of ['0.99', '10.01']) {
        const res = await createOrder(api.app, merchant, { cny_amount: amount, paychannel_id: id });
        expect([res.status, res.body.code]).toEqual([400, 40000]);
        expect(res.body.msg).toContain('cny_amount');
      }
      expect((await createOrder(api.app, merchant, { cny_amount: '10.00', paychannel_id: id })).body.code).toBe(1);
      expect((await createOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: id })).body.code).toBe(1);
    });

    it('answers 40301 for a channel not linked, unknown or disabled, naming the channels that are linked', async () => {
      const { id } = await api.operator.channels.create({ category: 'processor', name: 'other', payMethod: 'alipay', adapter: 'sandbox' });
      // What getPayChannels lists is what 40301 names (SPEC 2).
      type Listed = { id: number; name: string; category: string; pay_method: string };
      const usable = (await post<{ list: Listed[] }>(api.app, '/api/merchant/getPayChannels', signed(merchant))).body.data.list;
      expect(usable.length).toBeGreaterThan(0);
      const linked = usable.map((c) => ({ id: c.id, name: c.name, category: c.category, pay_method: c.pay_method }));
      const notLinked = await createOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: id });
      expect([notLinked.body.code, notLinked.body.data]).toEqual([40301, { paychannel_id: id, linked }]);
      expect(notLinked.body.msg).toContain(`${id}`);
      const unknown = await createOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: 999999 });
      expect([unknown.body.code, unknown.body.data]).toEqual([40301, { paychannel_id: 999999, linked }]);
      await api.operator.channels.link(merchant.id, id);
      await api.operator.channels.setEnabled(id, false);
      const res = await createOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: id });
      expect([res.status, res.body.code, (res.body.data as unknown as { linked: unknown }).linked]).toEqual([403, 40301, linked]);
    });

    it('answers 40302 for a pay method the channel does not offer', async () => {
      const { id } = await api.operator.channels.create({ category: 'processor', name: 'alipay only', payMethod: 'alipay', adapter: 'sandbox' });
      await api.operator.channels.link(merchant.id, id);
      const res = await createOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: id, paychannel_paymethod: 'bank' });
      expect([res.status, res.body.code]).toEqual([403, 40302]);
    });
  });

  describe('a corrupted stored rate (written by SQL) is a logged 50000, never a fee of zero', () => {
    // A value the schema's CHECK would refuse; its digits must not reach the answer.
    const CORRUPT = '-0.00123456';
    let logged: jest.SpyInstance;

    beforeAll(async () => {
      // The rows a bug or a hand edit could leave: the rate CHECKs are dropped in this test's own database.
      for (const [table, check] of [
        ['merchants', 'merchants_deposit_rate_check'],
        ['channels', 'channels_default_rate_check'],
        ['merchant_channels', 'merchant_channels_rate_check'],
      ]) {
        await sql(api.app).query(`ALTER TABLE "${table}" DROP CONSTRAINT "${check}"`);
      }
    });
    beforeEach(() => {
      logged = jest.spyOn(Logger.prototype, 'error');
    });
    afterEach(() => logged.mockRestore());

    function expectInternalError(res: Answer<unknown>, owner: string): void {
      expect([res.status, res.body.code, res.body.msg, res.body.data]).toEqual([500, 50000, 'Internal error', null]);
      expect(res.raw).not.toContain('123456');
      // The filter logs the request's ids as fields and the error under err.
      const errors = logged.mock.calls.map((call) => (call[0] as { err?: string }).err ?? '');
      expect(errors.join('\n')).toContain(`the stored rate of ${owner} is not a rate from 0 to 1`);
    }

    async function ordersOf(merchantId: number): Promise<number> {
      const [{ count }] = await sql(api.app).query(`SELECT count(*)::int AS count FROM "orders" WHERE "merchant_id" = $1`, [merchantId]);
      return count;
    }

    it.each([
      ["the link's own rate", `UPDATE "merchant_channels" SET "rate" = ${CORRUPT} WHERE "merchant_id" = $1 AND "channel_id" = $2`, 'channel'],
      ["the channel's default rate", `UPDATE "channels" SET "default_rate" = ${CORRUPT} WHERE "id" = $2 AND $1::int > 0`, 'channel'],
      ["the merchant's deposit rate", `UPDATE "merchants" SET "deposit_rate" = ${CORRUPT} WHERE "id" = $1 AND $2::int > 0`, 'merchant'],
    ])('createOrder with %s corrupted: 50000, logged with its ids, no order', async (_name, corrupt, owner) => {
      const { merchant: m, channels } = await merchantWithChannels(api.operator);
      await sql(api.app).query(corrupt, [m.id, channels.processor]);
      const res = await createOrder(api.app, m, { cny_amount: '100.00', paychannel_id: channels.processor });
      expectInternalError(res, owner === 'channel' ? `merchant ${m.id} channel ${channels.processor}` : `merchant ${m.id}`);
      expect(await ordersOf(m.id)).toBe(0);
      // The merchant's other channels, whose rates are sound, still work unless the merchant's own rate is the bad one.
      const other = await createOrder(api.app, m, { cny_amount: '100.00', paychannel_id: channels.warehouse });
      expect(other.body.code).toBe(owner === 'channel' ? 1 : 50000);
    });

    it('orderQueryDetail and orderQueryList of an order whose service_rate is corrupted: 50000, logged with its order_no', async () => {
      const { merchant: m, channels } = await merchantWithChannels(api.operator);
      const created = await createOrder(api.app, m, { cny_amount: '100.00', paychannel_id: channels.processor });
      expect(created.body.code).toBe(1);
      const orderNo = created.body.data.order_no;
      await sql(api.app).query(`UPDATE "orders" SET "service_rate" = ${CORRUPT} WHERE "order_no" = $1`, [orderNo]);
      expectInternalError(await orderDetail(api.app, m, orderNo), `order ${orderNo}`);
      logged.mockClear();
      expectInternalError(await post(api.app, '/api/merchant/orderQueryList', signed(m, {})), `order ${orderNo}`);
    });
  });

  describe('subject and return_url (SPEC 5)', () => {
    it('are kept on the order, return_url in its canonical form; the subject defaults to "Order {merchant_order_no or order_no}"', async () => {
      const subject = '会员 30 天 · 1 month "premium" <b>';
      const given = await createOrder(api.app, merchant, {
        cny_amount: '3.00',
        paychannel_id: channel,
        subject: '商'.repeat(128),
        return_url: 'HTTPS://Shop.Example/orders/1?x=1#top',
      });
      expect(given.body.code).toBe(1);
      expect(await orderRow(api.app, given.body.data.order_no)).toMatchObject({
        subject: '商'.repeat(128),
        return_url: 'https://shop.example/orders/1?x=1#top',
      });
      const quoted = await createOrder(api.app, merchant, { cny_amount: '3.00', paychannel_id: channel, subject });
      expect((await orderRow(api.app, quoted.body.data.order_no)).subject).toBe(subject);
      const plain = await createOrder(api.app, merchant, { cny_amount: '3.00', paychannel_id: channel });
      expect(await orderRow(api.app, plain.body.data.order_no)).toMatchObject({ subject: `Order ${plain.body.data.order_no}`, return_url: null });
      const named = await createOrder(api.app, merchant, { cny_amount: '3.00', paychannel_id: channel, merchant_order_no: 'shop-subject-1' });
      expect((await orderRow(api.app, named.body.data.order_no)).subject).toBe('Order shop-subject-1');
    });

    it('take part in what a repeat must match: the same again is the first order, another subject or return_url 40900', async () => {
      const params = { cny_amount: '4.00', paychannel_id: channel, merchant_order_no: 'shop-subject-2', subject: 'A', return_url: 'https://shop.example/a' };
      const first = await createOrder(api.app, merchant, params);
      expect((await createOrder(api.app, merchant, params)).body.data).toEqual(first.body.data);
      for (const change of [{ subject: 'B' }, { return_url: 'https://shop.example/b' }, { subject: undefined }, { return_url: undefined }]) {
        const res = await createOrder(api.app, merchant, { ...params, ...change });
        expect([res.status, res.body.code, res.body.data]).toEqual([409, 40900, { order_no: first.body.data.order_no, differs: Object.keys(change) }]);
      }
      // Left out, the subject is its default, which a repeat that leaves it out again matches.
      const plain = { cny_amount: '4.00', paychannel_id: channel, merchant_order_no: 'shop-subject-3' };
      const firstPlain = await createOrder(api.app, merchant, plain);
      expect((await createOrder(api.app, merchant, plain)).body.data).toEqual(firstPlain.body.data);
      const named = await createOrder(api.app, merchant, { ...plain, subject: 'Order shop-subject-3' });
      expect(named.body.data).toEqual(firstPlain.body.data);
    });
  });

  describe('idempotency by merchant_order_no', () => {
    it('a repeat with the same parameters returns the first order; different parameters 40900', async () => {
      const params = { cny_amount: '20.00', paychannel_id: channel, merchant_order_no: 'shop-1001', notify_url: 'https://shop.example/n' };
      const first = await createOrder(api.app, merchant, params);
      expect(first.body.code).toBe(1);
      expect(first.body.data.merchant_order_no).toBe('shop-1001');
      const again = await createOrder(api.app, merchant, { ...params, cny_amount: 20 });
      expect(again.body.code).toBe(1);
      expect(again.body.data).toEqual(first.body.data);
      // SPEC 2: 40900 names the first order and what differs from it.
      for (const change of [{ cny_amount: '20.01' }, { paychannel_paymethod: 'wxpay' }, { notify_url: 'https://shop.example/m' }, { customer_name: 'x' }]) {
        const res = await createOrder(api.app, merchant, { ...params, ...change });
        expect([res.status, res.body.code, res.body.data]).toEqual([409, 40900, { order_no: first.body.data.order_no, differs: Object.keys(change) }]);
      }
      const several = await createOrder(api.app, merchant, { ...params, cny_amount: '21.00', customer_name: '张三' });
      expect(several.body.data).toEqual({ order_no: first.body.data.order_no, differs: ['cny_amount', 'customer_name'] });
      expect(several.body.msg).toMatch(/data\.differs/);
      // Another merchant may use the same merchant_order_no.
      const { merchant: other, channels } = await merchantWithChannels(api.operator);
      expect((await createOrder(api.app, other, { ...params, paychannel_id: channels.remotepay })).body.code).toBe(1);
    });

    it('a repeat is answered before the channel checks: the first order even after its channel was disabled', async () => {
      const { id } = await api.operator.channels.create({
        category: 'processor',
        name: 'soon disabled',
        payMethod: 'alipay',
        adapter: 'sandbox',
        max: '50.00',
      });
      await api.operator.channels.link(merchant.id, id);
      const params = { cny_amount: '30.00', paychannel_id: id, merchant_order_no: 'before-disable' };
      const first = await createOrder(api.app, merchant, params);
      expect(first.body.code).toBe(1);
      await api.operator.channels.setEnabled(id, false);
      const again = await createOrder(api.app, merchant, params);
      expect([again.status, again.body.code]).toEqual([200, 1]);
      expect(again.body.data).toEqual(first.body.data);
      // Different parameters on a disabled channel still say which rule was broken: the repeat.
      expect((await createOrder(api.app, merchant, { ...params, cny_amount: '31.00' })).body.code).toBe(40900);
      // Without a merchant_order_no the channel check applies as before.
      expect((await createOrder(api.app, merchant, { cny_amount: '30.00', paychannel_id: id })).body.code).toBe(40301);
    });

    it('ten concurrent repeats create exactly one order', async () => {
      const params = { cny_amount: '33.00', paychannel_id: channel, merchant_order_no: 'race-1' };
      const answers = await Promise.all(Array.from({ length: 10 }, () => createOrder(api.app, merchant, params)));
      expect(answers.map((a) => a.body.code)).toEqual(Array(10).fill(1));
      expect(new Set(answers.map((a) => a.body.data.order_no)).size).toBe(1);
      expect(answers.every((a) => a.body.data.pay_url !== null)).toBe(true);
      const [{ count }] = await sql(api.app).query(`SELECT count(*)::int AS count FROM "orders" WHERE "merchant_id" = $1 AND "merchant_order_no" = 'race-1'`, [
        merchant.id,
      ]);
      expect(count).toBe(1);
    });

    it('ten concurrent conflicting repeats: one order, the rest 40900', async () => {
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          createOrder(api.app, merchant, { cny_amount: `${i + 1}.00`, paychannel_id: channel, merchant_order_no: 'race-2' }),
        ),
      );
      expect(answers.filter((a) => a.body.code === 1)).toHaveLength(1);
      expect(answers.filter((a) => a.body.code === 40900)).toHaveLength(9);
    });
  });

  describe('orderQueryList and orderQueryDetail', () => {
    let m: Credentials;
    let orderNos: string[];
    const list = (params: Record<string, unknown> = {}) =>
      post<{ list: Record<string, unknown>[]; total: number; page: number; limit: number }>(api.app, '/api/merchant/orderQueryList', signed(m, params));

    beforeAll(async () => {
      const made = await merchantWithChannels(api.operator);
      m = made.merchant;
      orderNos = [];
      for (let i = 0; i < 5; i++) {
        const res = await createOrder(api.app, m, { cny_amount: `${i + 1}.00`, paychannel_id: made.channels.processor });
        orderNos.push(res.body.data.order_no);
      }
      // Spread createtime: order i created i hours ago; one sell order; one cancelled.
      const db = sql(api.app);
      for (let i = 0; i < 5; i++) {
        await db.query(`UPDATE "orders" SET "created_at" = now() - make_interval(hours => $2), "updated_at" = now() WHERE "order_no" = $1`, [
          orderNos[i],
          5 - i,
        ]);
      }
      // A sell order's amounts are the balance's side: no deposit, cny + service debited.
      await db.query(`UPDATE "orders" SET "order_type" = 2, "deposit_fen" = 0, "merchant_actual_fen" = "cny_fen" + "service_fen" WHERE "order_no" = $1`, [
        orderNos[0],
      ]);
      await db.query(`UPDATE "orders" SET "status" = 'cancelled' WHERE "order_no" = $1`, [orderNos[1]]);
    });

    it('lists newest first with exactly the interface fields, default page 1 limit 20', async () => {
      const res = await list();
      expect(res.body.code).toBe(1);
      expect(res.body.data).toMatchObject({ total: 5, page: 1, limit: 20 });
      expect(res.body.data.list.map((o) => o.order_no)).toEqual([...orderNos].reverse());
      for (const o of res.body.data.list) expect(Object.keys(o).sort()).toEqual(ORDER_FIELDS);
      expect(res.body.data.list[4]).toMatchObject({ order_type: 2, cny_amount: '1.00', service_rate: '0.00600000' });
    });

    it('pages', async () => {
      const p1 = await list({ page: 1, limit: 2 });
      const p3 = await list({ page: '3', limit: '2' });
      expect(p1.body.data.list.map((o) => o.order_no)).toEqual([orderNos[4], orderNos[3]]);
      expect(p3.body.data).toMatchObject({ total: 5, page: 3, limit: 2 });
      expect(p3.body.data.list.map((o) => o.order_no)).toEqual([orderNos[0]]);
      expect((await list({ page: 9 })).body.data).toMatchObject({ list: [], total: 5 });
    });

    it('filters by status, order_type and inclusive time bounds', async () => {
      expect((await list({ status: 'cancelled' })).body.data.list.map((o) => o.order_no)).toEqual([orderNos[1]]);
      expect((await list({ status: 'pending' })).body.data.total).toBe(4);
      expect((await list({ order_type: 2 })).body.data.list.map((o) => o.order_no)).toEqual([orderNos[0]]);
      expect((await list({ order_type: '1', status: 'pending' })).body.data.total).toBe(3);
      const all = (await list()).body.data.list;
      const t = (i: number) => all.find((o) => o.order_no === orderNos[i])!.createtime as number;
      const between = await list({ start_time: t(1), end_time: t(3) });
      expect(between.body.data.list.map((o) => o.order_no)).toEqual([orderNos[3], orderNos[2], orderNos[1]]);
      expect((await list({ start_time: t(4), end_time: t(4) })).body.data.total).toBe(1);
      expect((await list({ start_time: t(4) + 1 })).body.data.total).toBe(0);
      expect((await list({ end_time: t(0) })).body.data.list.map((o) => o.order_no)).toEqual([orderNos[0]]);
      expect((await list({ status: 'completed' })).body.data).toMatchObject({ list: [], total: 0 });
    });

    it.each([
      ['page', { page: 0 }],
      ['page', { page: 'x' }],
      ['limit', { limit: 0 }],
      ['limit', { limit: 101 }],
      ['limit', { limit: 1.5 }],
      ['status', { status: 'done' }],
      ['order_type', { order_type: 3 }],
      ['start_time', { start_time: 'yesterday' }],
      ['end_time', { end_time: -1 }],
      ['start_time', { start_time: 200, end_time: 100 }],
    ])('answers 40000 naming %s for %p', async (field, params) => {
      const res = await list(params);
      expect([res.status, res.body.code]).toEqual([400, 40000]);
      expect((res.body.data as unknown as { errors: { field: string }[] }).errors[0].field).toBe(field);
    });

    it('accepts limit 100', async () => {
      expect((await list({ limit: 100 })).body.data.limit).toBe(100);
    });

    it('shows only its own orders; detail of an unknown or foreign order is 40400', async () => {
      const detail = await orderDetail(api.app, m, orderNos[2]);
      expect(detail.body.code).toBe(1);
      expect(Object.keys(detail.body.data).sort()).toEqual(ORDER_FIELDS);
      expect(detail.body.data).toMatchObject({ order_no: orderNos[2], status: 'pending', cny_amount: '3.00', service_amount: 2, merchant_actual_amount: 298 });

      const foreign = await orderDetail(api.app, merchant, orderNos[2]);
      expect([foreign.status, foreign.body.code, foreign.body.data]).toEqual([404, 40400, null]);
      expect((await orderDetail(api.app, m, '2099010100000000000000')).body.code).toBe(40400);
      const missing = await post(api.app, '/api/merchant/orderQueryDetail', signed(m));
      expect(missing.body.code).toBe(40000);
      const foreignList = await post<{ list: { order_no: string }[] }>(api.app, '/api/merchant/orderQueryList', signed(merchant, { limit: 100 }));
      expect(foreignList.body.data.list.some((o) => orderNos.includes(o.order_no))).toBe(false);
    });

    it('finds an order by merchant_order_no, the alternative key: exactly one of the two, and both answers carry it', async () => {
      const made = await merchantWithChannels(api.operator);
      const created = await createOrder(api.app, made.merchant, {
        cny_amount: '7.00',
        paychannel_id: made.channels.processor,
        merchant_order_no: 'lost-answer-1',
      });
      const orderNo = created.body.data.order_no;
      const byOwn = await post<Record<string, unknown>>(
        api.app,
        '/api/merchant/orderQueryDetail',
        signed(made.merchant, { merchant_order_no: 'lost-answer-1' }),
      );
      expect([byOwn.status, byOwn.body.code]).toEqual([200, 1]);
      expect(byOwn.body.data).toEqual((await orderDetail(api.app, made.merchant, orderNo)).body.data);
      expect(byOwn.body.data).toMatchObject({ order_no: orderNo, merchant_order_no: 'lost-answer-1', cny_amount: '7.00' });
      const listed = await post<{ list: Record<string, unknown>[] }>(api.app, '/api/merchant/orderQueryList', signed(made.merchant, {}));
      expect(listed.body.data.list[0]).toMatchObject({ order_no: orderNo, merchant_order_no: 'lost-answer-1' });
      // An order created without one shows null.
      expect((await orderDetail(api.app, m, orderNos[2])).body.data.merchant_order_no).toBeNull();

      // Another merchant's number, or an unknown one: 40400, as for order_no.
      const foreign = await post(api.app, '/api/merchant/orderQueryDetail', signed(m, { merchant_order_no: 'lost-answer-1' }));
      expect([foreign.status, foreign.body.code, foreign.body.data]).toEqual([404, 40400, null]);
      // Neither, both (even naming the same order), or a malformed one: 40000.
      for (const params of [
        {},
        { order_no: '', merchant_order_no: '' },
        { order_no: orderNo, merchant_order_no: 'lost-answer-1' },
        { merchant_order_no: 'has space' },
      ]) {
        const res = await post<{ errors: { field: string }[] }>(api.app, '/api/merchant/orderQueryDetail', signed(made.merchant, params));
        expect([res.status, res.body.code]).toEqual([400, 40000]);
        expect(res.body.msg).toMatch(/merchant_order_no/);
      }
    });
  });
});
