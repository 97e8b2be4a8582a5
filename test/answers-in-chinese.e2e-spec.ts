import type { InjectOptions } from 'light-my-request';
import { ErrorCode } from '@app/common';
import type { Credentials } from '@app/operator';
import { type TestApi, merchantWithChannels, newNonce, signed, startTestApi } from './helpers/api';
import { completedOrder } from './helpers/money-out';
import { createOrder, sql } from './helpers/orders';

const CHINESE = /\p{Script=Han}/u;

/** One way to make the API answer `code`: a fresh request each call (a nonce is used once), and what of `data` must match across languages. */
interface Case {
  code: number;
  request: () => InjectOptions;
  /** Before each request (a first use of the nonce 40104 refuses). */
  before?: (request: InjectOptions) => Promise<void>;
  /** The part of data that is the same for two such requests (default: all of it). */
  same?: (data: unknown) => unknown;
  /** Parameter names msg must keep in Chinese too. */
  names?: string[];
}

const json = (url: string, body: Record<string, unknown> | string, headers: Record<string, string> = {}): InjectOptions => ({
  method: 'POST',
  url,
  headers: { 'content-type': 'application/json', ...headers },
  payload: typeof body === 'string' ? body : JSON.stringify(body),
});

/**
 * SPEC 2: with `Accept-Language` preferring Chinese, `msg` is Simplified Chinese for every code
 * the API answers, success included; `code` and `data` are the same in both languages. (50300
 * needs a dependency down: envelope-exception.filter.spec.ts covers its words.)
 */
describe('answers in Chinese when asked (Accept-Language)', () => {
  let api: TestApi;
  let shop: Credentials;
  let channel: number;
  let alipayOnly: number;
  let disabled: Credentials;
  let live: Credentials;
  let brokenEpay: number;
  let completed: { order_no: string };
  let corrupted: string;
  const cases: Case[] = [];

  beforeAll(async () => {
    api = await startTestApi();
    const made = await merchantWithChannels(api.operator);
    shop = made.merchant;
    channel = made.channels.processor;
    ({ id: alipayOnly } = await api.operator.channels.create({ category: 'processor', name: 'alipay only', payMethod: 'alipay', adapter: 'sandbox' }));
    await api.operator.channels.link(shop.id, alipayOnly);
    disabled = (await merchantWithChannels(api.operator)).merchant;
    await api.operator.merchants.setStatus(disabled.id, 'disabled');
    // A live merchant whose epay channel has no gateway: the channel cannot make the payment (50200).
    live = await api.operator.merchants.create({ name: 'live shop' });
    ({ id: brokenEpay } = await api.operator.channels.create({
      category: 'remotepay',
      name: 'epay without gateway',
      payMethod: 'alipay',
      adapter: 'epay',
      config: JSON.stringify({ merchant_no: '1001', secret_key: 'k' }),
    }));
    await api.operator.channels.link(live.id, brokenEpay);
    expect((await createOrder(api.app, shop, { cny_amount: '12.00', paychannel_id: channel, merchant_order_no: 'zh-1' })).body.code).toBe(1);
    completed = await completedOrder(api.app, shop, { cny_amount: '5.00', paychannel_id: channel });
    const other = await createOrder(api.app, shop, { cny_amount: '6.00', paychannel_id: channel });
    corrupted = other.body.data.order_no;
    await sql(api.app).query(`UPDATE "orders" SET "service_rate" = -0.5 WHERE "order_no" = $1`, [corrupted]);
  });
  afterAll(() => api?.close());

  const merchantCall = (operation: string, who: Pick<Credentials, 'api_key' | 'api_secret'>, params: Record<string, unknown> = {}) =>
    json(`/api/merchant/${operation}`, signed(who, params));

  beforeAll(() => {
    const sameKeys = (data: unknown) => Object.keys(data as object).sort();
    cases.push(
      { code: 1, request: () => merchantCall('getPayChannels', shop) },
      // A repeat: the first order again, the same data in both languages.
      {
        code: 1,
        request: () =>
          merchantCall('createOrder', shop, {
            order_type: 1,
            cny_amount: '12.00',
            paychannel_id: channel,
            paychannel_paymethod: 'alipay',
            merchant_order_no: 'zh-1',
          }),
      },
      {
        code: ErrorCode.BadRequest,
        request: () => merchantCall('createOrder', shop, { order_type: 1, cny_amount: 'abc', paychannel_id: channel, paychannel_paymethod: 'alipay' }),
        names: ['cny_amount'],
      },
      { code: ErrorCode.BadRequest, request: () => json('/api/merchant/getPayChannels', '{"api_key":') },
      { code: ErrorCode.AuthMissing, request: () => json('/api/merchant/getPayChannels', {}), names: ['api_key'] },
      { code: ErrorCode.AuthUnknownKey, request: () => merchantCall('getPayChannels', { api_key: 'mk_test_000000000000000000000000', api_secret: 'x' }) },
      { code: ErrorCode.AuthBadSignature, request: () => merchantCall('getPayChannels', { ...shop, api_secret: 'not the secret' }), same: sameKeys },
      {
        code: ErrorCode.AuthTimestamp,
        request: () => merchantCall('getPayChannels', shop, { timestamp: Math.floor(Date.now() / 1000) - 3600 }),
      },
      {
        code: ErrorCode.AuthNonceUsed,
        request: () => merchantCall('getPayChannels', shop, { nonce: newNonce() }),
        before: async (request) => void (await api.app.inject(request)),
      },
      { code: ErrorCode.MerchantDisabled, request: () => merchantCall('getPayChannels', disabled) },
      {
        code: ErrorCode.ChannelUnavailable,
        request: () => merchantCall('createOrder', shop, { order_type: 1, cny_amount: '1.00', paychannel_id: 999999, paychannel_paymethod: 'alipay' }),
        names: ['data.linked'],
      },
      {
        code: ErrorCode.PayMethodUnavailable,
        request: () => merchantCall('createOrder', shop, { order_type: 1, cny_amount: '1.00', paychannel_id: alipayOnly, paychannel_paymethod: 'bank' }),
      },
      { code: ErrorCode.OrderNotFound, request: () => merchantCall('orderQueryDetail', shop, { order_no: '2000010101000000000000' }) },
      {
        code: ErrorCode.RegionNotFound,
        request: () => ({ method: 'GET', url: `/addons/paychannel/channel/processor/cityList?province=${encodeURIComponent('不存在')}` }),
      },
      { code: ErrorCode.RouteNotFound, request: () => ({ method: 'GET', url: '/no/such/route' }) },
      { code: ErrorCode.MethodNotAllowed, request: () => ({ method: 'GET', url: '/api/merchant/getPayChannels' }) },
      {
        code: ErrorCode.IdempotencyConflict,
        request: () =>
          merchantCall('createOrder', shop, {
            order_type: 1,
            cny_amount: '13.00',
            paychannel_id: channel,
            paychannel_paymethod: 'alipay',
            merchant_order_no: 'zh-1',
          }),
        names: ['merchant_order_no', 'data.differs'],
      },
      { code: ErrorCode.StateConflict, request: () => merchantCall('orderClose', shop, { order_no: completed.order_no }) },
      {
        code: ErrorCode.InsufficientBalance,
        request: () =>
          merchantCall('createSellOrder', shop, {
            cny_amount: '900000.00',
            paychannel_id: channel,
            payee_name: '张三',
            payee_account: '6222021234561234',
            payee_bank: '中国工商银行',
          }),
      },
      { code: ErrorCode.PayloadTooLarge, request: () => json('/api/merchant/getPayChannels', { filler: 'x'.repeat(64 * 1024) }) },
      {
        code: ErrorCode.UnsupportedMediaType,
        request: () => ({ method: 'POST', url: '/api/merchant/getPayChannels', headers: { 'content-type': 'text/plain' }, payload: 'x' }),
      },
      {
        // An address past its failed-authentication burst: every merchant request from it is refused for a while.
        code: ErrorCode.RateLimited,
        request: () => ({ ...json('/api/merchant/getPayChannels', {}), remoteAddress: '198.51.100.7' }),
        before: async (request) => {
          for (let i = 0; i < 200 && (await api.app.inject(request)).json().code !== ErrorCode.RateLimited; i++);
        },
      },
      { code: ErrorCode.Internal, request: () => merchantCall('orderQueryDetail', shop, { order_no: corrupted }) },
      {
        code: ErrorCode.ChannelFailed,
        request: () => merchantCall('createOrder', live, { order_type: 1, cny_amount: '1.00', paychannel_id: brokenEpay, paychannel_paymethod: 'alipay' }),
        same: sameKeys,
      },
    );
  });

  it('covers every code of SPEC 2 but 50300', () => {
    const all = Object.values(ErrorCode).filter((v): v is ErrorCode => typeof v === 'number');
    expect([...new Set(cases.map((c) => c.code))].sort()).toEqual([1, ...all.filter((c) => c !== ErrorCode.DependencyUnavailable)].sort());
  });

  it('says every one in Chinese for zh-CN and in English otherwise; code and data the same', async () => {
    for (const c of cases) {
      const answers: Record<string, { code: number; msg: string; data: unknown }> = {};
      for (const lang of ['zh-CN', 'en-US,en;q=0.9', 'zh-Hans;q=0.9, en;q=0.5', '']) {
        const request = c.request();
        await c.before?.(request);
        const res = await api.app.inject({ ...request, headers: { ...(request.headers ?? {}), ...(lang ? { 'accept-language': lang } : {}) } });
        answers[lang] = res.json();
      }
      const zh = answers['zh-CN'];
      const en = answers[''];
      const label = `${c.code} ${zh.msg} / ${en.msg}`;
      expect([label, zh.code, en.code, answers['en-US,en;q=0.9'].code]).toEqual([label, c.code, c.code, c.code]);
      expect([label, CHINESE.test(zh.msg), CHINESE.test(en.msg)]).toEqual([label, true, false]);
      expect([label, answers['zh-Hans;q=0.9, en;q=0.5'].msg]).toEqual([label, zh.msg]);
      expect([label, answers['en-US,en;q=0.9'].msg]).toEqual([label, en.msg]);
      const same = c.same ?? ((data: unknown) => data);
      expect([label, same(zh.data)]).toEqual([label, same(en.data)]);
      for (const name of c.names ?? []) expect([label, name, zh.msg.includes(name)]).toEqual([label, name, true]);
    }
  }, 120_000);
});
