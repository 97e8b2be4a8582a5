import fc from 'fast-check';
import { canonicalString, sign } from '@app/signature';
import { type Credentials } from '@app/operator';
import { type TestApi, merchantWithChannels, newNonce, signed, startTestApi } from './helpers/api';
import { createOrder } from './helpers/orders';

/**
 * Property tests against the real app (PostgreSQL, Redis): whatever JSON a merchant sends, the
 * answer is an envelope and never a 5xx; whatever a client changes in a signed request, it
 * does not pass the signature check. Bounded: a fixed seed per property from FUZZ_SEED (so a
 * failure replays), a few hundred runs in all.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20_251_121);
const RUNS = Number(process.env.FUZZ_RUNS ?? 120);
const AUTH = ['api_key', 'timestamp', 'nonce', 'signature'];
const BODY_LIMIT = 64 * 1024;

interface Operation {
  path: string;
  /** Each parameter with values that pass validation, so a run mixes good and bad ones. */
  params: Record<string, fc.Arbitrary<unknown>>;
}

/** Numbers and number-like text at the edges. */
const edgeNumber = fc.constantFrom<unknown>(
  0,
  -0,
  1,
  -1,
  0.1,
  0.005,
  1e21,
  -1e21,
  1e-7,
  2 ** 31,
  2 ** 31 - 1,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  'NaN',
  'Infinity',
  '-Infinity',
  '-0',
  '1e21',
  '0x10',
  '1_000',
  ' 1',
  '1 ',
  '01',
  '1.',
  '.5',
  '100.005',
  '99999999999.99',
  '0.00',
  '١٢',
  '１',
);
const prototypeKeys = fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__');
const unicodeText = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 80 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', ' ', '\u0000', '\u202e', '\ud800', '\udfff', '😀'.repeat(40), 'Ω≈ç√', '<script>', "' OR 1=1 --", '%00', '\r\n', 'a&b=c'),
);
/** Up to about 60 KiB: the whole body stays under the 64 KiB limit most of the time; over it is 41300, also fine. */
const hugeText = fc
  .tuple(fc.integer({ min: 1_000, max: 60_000 }), fc.constantFrom('a', '中', '0'))
  .map(([n, c]) => c.repeat(Math.floor(n / Buffer.byteLength(c))));
/** Objects whose keys include the names prototype-pollution tries. */
const pollutingObject = fc.dictionary(fc.oneof(prototypeKeys, fc.string({ maxLength: 8 })), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });

const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 3, arbitrary: edgeNumber },
  { weight: 2, arbitrary: unicodeText },
  { weight: 1, arbitrary: hugeText },
  { weight: 1, arbitrary: pollutingObject },
  { weight: 1, arbitrary: fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(null, true, false, [], {}, [[[]]], { a: { b: { c: {} } } }) },
);

const orderNo = fc.stringMatching(/^\d{22}$/);

const MERCHANT_OPERATIONS = [
  'createOrder',
  'orderQueryList',
  'orderQueryDetail',
  'getPayChannels',
  'callbackResend',
  'callbackQueryList',
  'callbackRecover',
  'callbackTest',
  'orderClose',
  'refundCreate',
  'refundQuery',
  'refundQueryList',
  'createSellOrder',
  'statementQuery',
];

function operations(channelId: number): Operation[] {
  return [
    {
      path: '/api/merchant/createOrder',
      params: {
        order_type: fc.constantFrom<unknown>(1, '1'),
        cny_amount: fc.constantFrom<unknown>('100.00', '0.01', 5, '1000000.00'),
        paychannel_id: fc.constantFrom<unknown>(channelId, String(channelId)),
        paychannel_paymethod: fc.constantFrom('alipay', 'wxpay', 'bank'),
        customer_name: fc.string({ maxLength: 64 }),
        notify_url: fc.constantFrom('https://merchant.example/notify', 'http://127.0.0.1:9/cb'),
        merchant_order_no: fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/),
      },
    },
    {
      path: '/api/merchant/orderQueryList',
      params: {
        page: fc.integer({ min: 1, max: 5 }),
        limit: fc.integer({ min: 1, max: 100 }),
        status: fc.constantFrom('pending', 'paid', 'confirmed', 'completed', 'cancelled'),
        order_type: fc.constantFrom<unknown>(1, 2),
        start_time: fc.integer({ min: 0, max: 2_000_000_000 }),
        end_time: fc.integer({ min: 0, max: 2_000_000_000 }),
      },
    },
    { path: '/api/merchant/orderQueryDetail', params: { order_no: orderNo } },
    { path: '/api/merchant/getPayChannels', params: { category: fc.constantFrom('processor', 'remotepay', 'warehouse') } },
    { path: '/api/merchant/callbackResend', params: { order_no: orderNo } },
    { path: '/api/merchant/callbackQueryList', params: { order_no: orderNo } },
    {
      path: '/api/merchant/callbackRecover',
      params: {
        start_time: fc.integer({ min: -10 * 86_400, max: 3600 }).map((d) => String(Math.floor(Date.now() / 1000) - d)),
        end_time: fc.integer({ min: -86_400, max: 86_400 }).map((d) => Math.floor(Date.now() / 1000) - d),
      },
    },
    // Addresses that fail at once (refused, unresolvable, blocked): the fuzz must not wait for timeouts.
    {
      path: '/api/merchant/callbackTest',
      params: { url: fc.constantFrom('http://127.0.0.1:9/cb', 'https://merchant.invalid/notify', 'http://[::1]:9/x', 'ftp://x') },
    },
    { path: '/api/merchant/orderClose', params: { order_no: orderNo } },
    {
      path: '/api/merchant/refundCreate',
      params: {
        order_no: orderNo,
        refund_amount: fc.constantFrom<unknown>('1.00', '0.01', 5, '1000000.00'),
        merchant_refund_no: fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/),
        reason: fc.string({ maxLength: 128 }),
        notify_url: fc.constantFrom('https://merchant.example/notify', 'http://127.0.0.1:9/cb'),
      },
    },
    { path: '/api/merchant/refundQuery', params: { refund_no: orderNo, merchant_refund_no: fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/) } },
    { path: '/api/merchant/refundQueryList', params: { order_no: orderNo } },
    {
      path: '/api/merchant/statementQuery',
      params: {
        date: fc.oneof(
          fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
          fc.string({ maxLength: 12 }),
        ),
      },
    },
    {
      path: '/api/merchant/createSellOrder',
      params: {
        cny_amount: fc.constantFrom<unknown>('1.00', '0.01', 5, '1000000.00'),
        paychannel_id: fc.constantFrom<unknown>(channelId, String(channelId)),
        payee_name: fc.string({ minLength: 1, maxLength: 64 }),
        payee_account: fc.stringMatching(/^\d{12,19}$/),
        payee_bank: fc.string({ minLength: 1, maxLength: 64 }),
        merchant_order_no: fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/),
        notify_url: fc.constantFrom('https://merchant.example/notify', 'http://127.0.0.1:9/cb'),
      },
    },
  ];
}

/** Each parameter absent, valid or random; a few extra keys (prototype-pollution names among them). */
function paramsFor(op: Operation): fc.Arbitrary<Record<string, unknown>> {
  const slots = Object.entries(op.params).map(([key, valid]) => fc.option(fc.oneof(valid, anyValue), { nil: undefined }).map((value) => [key, value] as const));
  const extras = fc.array(fc.tuple(fc.oneof(prototypeKeys, fc.string({ minLength: 1, maxLength: 12 })), anyValue), { maxLength: 3 });
  return fc.tuple(fc.tuple(...slots), extras).map(([own, more]) => {
    // defineProperty: a "__proto__" key must be an own key, as JSON.parse would make it, not a prototype change.
    const params: Record<string, unknown> = {};
    for (const [key, value] of [...own, ...more]) {
      if (value === undefined || AUTH.includes(key)) continue;
      Object.defineProperty(params, key, { value, enumerable: true, writable: true, configurable: true });
    }
    return params;
  });
}

/** Every UTF-8 byte as %XX (encodeURIComponent throws on a lone surrogate; this sends its replacement character). */
function percentEncode(text: string): string {
  return [...Buffer.from(text, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
}

const sigText = (value: unknown): string => (typeof value === 'string' ? value.toLowerCase() : (JSON.stringify(value) ?? ''));

function isEnvelope(status: number, contentType: unknown, raw: string): string | null {
  if (status >= 500) return `HTTP ${status}`;
  if (contentType !== 'application/json; charset=utf-8') return `content-type ${String(contentType)}`;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw);
  } catch {
    return 'not JSON';
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'not an object';
  if (Object.keys(body).sort().join() !== 'code,data,msg,time') return `keys ${Object.keys(body).join()}`;
  if (!Number.isInteger(body.code) || typeof body.msg !== 'string' || !/^\d+$/.test(String(body.time))) return 'field types';
  if ((body.code === 1) !== (status === 200)) return `code ${String(body.code)} with HTTP ${status}`;
  if (body.code === 50000) return 'code 50000';
  return null;
}

/** Nesting written as JSON text: building it as a value would overflow this process's own stack first. */
function nested(depth: number, kind: 'array' | 'object' | 'mixed', leaf = '1'): string {
  const open = (i: number): string => (kind === 'array' || (kind === 'mixed' && i % 2 === 0) ? '[' : '{"a":');
  const close = (i: number): string => (kind === 'array' || (kind === 'mixed' && i % 2 === 0) ? ']' : '}');
  let head = '';
  let tail = '';
  for (let i = 0; i < depth; i++) {
    head += open(i);
    tail = close(i) + tail;
  }
  return head + leaf + tail;
}

/** `params` as a JSON object with one more member whose value is raw JSON text. */
function withRawMember(params: Record<string, unknown>, key: string, rawValue: string): string {
  return `${JSON.stringify(params).slice(0, -1)},${JSON.stringify(key)}:${rawValue}}`;
}

/** Nested or oversized JSON values, as text, deep enough to overflow a recursive walk but mostly under the 64 KiB limit. */
const nestedOrHuge: fc.Arbitrary<string> = fc.oneof(
  fc.integer({ min: 1, max: 32_000 }).map((depth) => nested(depth, 'array')),
  fc.integer({ min: 1, max: 10_000 }).map((depth) => nested(depth, 'object')),
  fc.integer({ min: 1, max: 16_000 }).map((depth) => nested(depth, 'mixed')),
  fc
    .tuple(fc.integer({ min: 1, max: 60 }), fc.constantFrom('array' as const, 'object' as const))
    .map(([depth, kind]) => nested(depth, kind, JSON.stringify('x'.repeat(1000)))),
  fc.integer({ min: 30_000, max: 90_000 }).map((n) => JSON.stringify('z'.repeat(n))),
  fc.integer({ min: 1, max: 3_000 }).map((n) => `{${Array.from({ length: n }, (_, i) => `"k${i}":[${i}]`).join(',')}}`),
  fc.jsonValue({ maxDepth: 6 }).map((v) => JSON.stringify(v)),
);

describe('fuzzing (fast-check, real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let merchant: Credentials;
  let ops: Operation[];
  let sandboxChannel: number;
  let epayChannel: number;

  beforeAll(async () => {
    // Hundreds of forged requests from one address: the auth-failure throttle would answer them 42900 before the checks under test.
    api = await startTestApi({
      RATE_LIMIT_MERCHANT_PER_SECOND: '1000000',
      RATE_LIMIT_MERCHANT_BURST: '1000000',
      RATE_LIMIT_IP_PER_SECOND: '1000000',
      RATE_LIMIT_AUTH_FAIL_PER_SECOND: '1000000',
    });
    let channels: Record<string, number>;
    ({ merchant, channels } = await merchantWithChannels(api.operator));
    ops = operations(channels.processor);
    // Sandbox channels get a secret, so a notification carrying a well-formed sign reaches the adapter's canonical string.
    sandboxChannel = channels.processor;
    ({ id: epayChannel } = await api.operator.channels.create({
      category: 'remotepay',
      name: 'epay',
      payMethod: 'alipay',
      adapter: 'epay',
      rate: '0.006',
      config: JSON.stringify({ merchant_no: '1001', secret_key: 'epay-secret', gateway_url: 'https://epay.example/' }),
    }));
    // Something to find for the detail, list and resend runs.
    expect((await createOrder(api.app, merchant, { cny_amount: '10.00', paychannel_id: channels.processor })).body.code).toBe(1);
  });
  afterAll(() => api.close());

  async function send(path: string, body: Record<string, unknown>, query = ''): Promise<{ status: number; code: number; problem: string | null }> {
    const res = await api.app.inject({
      method: 'POST',
      url: `${path}${query}`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
    const problem = isEnvelope(res.statusCode, res.headers['content-type'], res.body);
    return { status: res.statusCode, code: problem ? NaN : (res.json() as { code: number }).code, problem };
  }

  it('random values for every parameter of every merchant operation, signed correctly: an envelope, never a 5xx, never a signature mismatch', async () => {
    const opIndex = fc.integer({ min: 0, max: 4 });
    await fc.assert(
      fc.asyncProperty(
        opIndex.chain((i) => fc.tuple(fc.constant(i), paramsFor(ops[i]))),
        async ([i, params]) => {
          const body = signed(merchant, params);
          const size = Buffer.byteLength(JSON.stringify(body));
          const res = await send(ops[i].path, body);
          if (res.problem) throw new Error(`${ops[i].path}: ${res.problem}`);
          // Signed by the same rules the server checks: the signature must never be the reason for a refusal.
          expect(res.code).not.toBe(40102);
          if (size > BODY_LIMIT) expect(res.code).toBe(41300);
        },
      ),
      { seed: SEED, numRuns: RUNS * 3, endOnFailure: true },
    );
  }, 60_000);

  it('random authentication parameters (signed with whatever they are): an envelope, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 4 }), fc.constantFrom(...AUTH.slice(0, 3)), anyValue, async (i, field, value) => {
        const body: Record<string, unknown> = { api_key: merchant.api_key, timestamp: Math.floor(Date.now() / 1000), nonce: newNonce() };
        body[field] = value;
        body.signature = sign(body, merchant.api_secret);
        const res = await send(ops[i].path, body);
        if (res.problem) throw new Error(`${ops[i].path} with ${field}: ${res.problem}`);
      }),
      { seed: SEED + 1, numRuns: RUNS, endOnFailure: true },
    );
  }, 60_000);

  it('random query strings on the region routes: an envelope, never a 5xx', async () => {
    const routes = ['regionData', 'provinceList', 'cityList', 'districtList'];
    const names = fc.oneof(fc.constantFrom('province', 'city', 'district', '__proto__', 'constructor', 'province[]', 'city[a]'), fc.string({ maxLength: 10 }));
    const values = fc.oneof(
      fc.constantFrom('广东省', '广州市', '北京市', '市辖区', '东莞市', '新疆维吾尔自治区', '和田地区', ' 广东省', '广东', '%E5%B9', '%ZZ', '%', '+'),
      unicodeText,
      fc.string({ maxLength: 2000 }),
    );
    const raw = fc.oneof(
      // Key and value percent-encoded as a browser would, or sent as they are (broken escapes included).
      fc
        .array(fc.tuple(names, values, fc.boolean()), { maxLength: 5 })
        .map((pairs) => pairs.map(([k, v, encode]) => (encode ? `${percentEncode(k)}=${percentEncode(v)}` : `${k}=${v}`.replace(/[#\s]/g, ''))).join('&')),
      fc.constantFrom('province', 'province=', '&&&', '=x', 'province=a&province=b', 'province=%E5%B9%BF%E4%B8%9C%E7%9C%81&city=%FF', '?=?'),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), raw, async (route, query) => {
        const res = await api.app.inject({ method: 'GET', url: `/addons/paychannel/channel/processor/${route}?${query}` });
        const problem = isEnvelope(res.statusCode, res.headers['content-type'], res.body);
        if (problem) throw new Error(`${route}?${query}: ${problem}`);
      }),
      { seed: SEED + 2, numRuns: RUNS * 2, endOnFailure: true },
    );
  }, 60_000);

  type Mutation =
    | { kind: 'change'; key: string; value: unknown }
    | { kind: 'add'; key: string; value: unknown }
    | { kind: 'remove'; key: string }
    | { kind: 'flip'; at: number; by: number }
    | { kind: 'swap'; a: string; b: string }
    | { kind: 'toQuery'; key: string; value: string };

  const mutation: fc.Arbitrary<(keys: string[]) => Mutation> = fc.oneof(
    fc.tuple(fc.nat(), anyValue).map(
      ([n, value]) =>
        (keys: string[]) =>
          ({ kind: 'change', key: keys[n % keys.length], value }) as Mutation,
    ),
    fc.tuple(fc.oneof(prototypeKeys, fc.string({ minLength: 1, maxLength: 12 })), anyValue).map(
      ([key, value]) =>
        () =>
          ({ kind: 'add', key, value }) as Mutation,
    ),
    fc.nat().map((n) => (keys: string[]) => ({ kind: 'remove', key: keys[n % keys.length] }) as Mutation),
    fc.tuple(fc.integer({ min: 0, max: 63 }), fc.integer({ min: 1, max: 15 })).map(
      ([at, by]) =>
        () =>
          ({ kind: 'flip', at, by }) as Mutation,
    ),
    fc.tuple(fc.nat(), fc.nat()).map(
      ([x, y]) =>
        (keys: string[]) =>
          ({ kind: 'swap', a: keys[x % keys.length], b: keys[y % keys.length] }) as Mutation,
    ),
    fc.tuple(fc.nat(), fc.string({ minLength: 1, maxLength: 20 })).map(
      ([n, value]) =>
        (keys: string[]) =>
          ({ kind: 'toQuery', key: keys[n % keys.length], value }) as Mutation,
    ),
  );

  it('random mutations of a valid signed request never pass the signature check (401xx before the nonce, never 1)', async () => {
    let tried = 0;
    await fc.assert(
      // A valid request of a random operation, and one change a forger could make to it.
      fc.asyncProperty(
        fc.integer({ min: 0, max: 4 }).chain((i) => fc.tuple(fc.constant(i), fc.record(ops[i].params))),
        mutation,
        async ([i, params], pick) => {
          const op = ops[i];
          const original = signed(merchant, params);
          const body: Record<string, unknown> = { ...original };
          let query = '';
          const m = pick(Object.keys(original));
          switch (m.kind) {
            case 'change':
            case 'add':
              Object.defineProperty(body, m.key, { value: m.value, enumerable: true, writable: true, configurable: true });
              break;
            case 'remove':
              delete body[m.key];
              break;
            case 'flip': {
              const sig = String(body.signature);
              const digit = (parseInt(sig[m.at], 16) + m.by) % 16;
              body.signature = sig.slice(0, m.at) + digit.toString(16) + sig.slice(m.at + 1);
              break;
            }
            case 'swap':
              [body[m.a], body[m.b]] = [body[m.b], body[m.a]];
              break;
            case 'toQuery':
              // Placement is not signed (query and body merge into one map): move it AND change it.
              delete body[m.key];
              query = `?${new URLSearchParams([[m.key, m.value]]).toString()}`;
              break;
          }
          const merged = { ...body, ...(m.kind === 'toQuery' ? { [m.key]: m.value } : {}) };
          // A change that leaves the signed text and the signature as they were is the same request, not a forgery.
          fc.pre(canonicalString(merged) !== canonicalString(original) || sigText(merged.signature) !== sigText(original.signature));
          tried++;
          const res = await send(op.path, body, query);
          if (res.problem) throw new Error(`${op.path} ${m.kind}: ${res.problem}`);
          // 40104 would mean the signature verified (the nonce is checked after it); 40000/41300: refused before, by the framework.
          expect([40100, 40101, 40102, 40103, 40000, 41300]).toContain(res.code);
          if (res.code === 40000) expect(m.kind === 'add' || m.kind === 'change').toBe(true);
        },
      ),
      { seed: SEED + 3, numRuns: RUNS * 2, endOnFailure: true },
    );
    expect(tried).toBeGreaterThan(RUNS);
  }, 60_000);

  const DEEP = 5_000;
  const deepCases = [
    ['array', nested(DEEP, 'array')],
    ['object', nested(DEEP, 'object')],
  ] as const;

  it.each(MERCHANT_OPERATIONS.flatMap((op) => deepCases.map(([kind, raw]) => [op, kind, raw])))(
    '%s: a %s-valued parameter 5,000 deep is 40000 naming it, before any signature work',
    async (op, _kind, raw) => {
      const res = await api.app.inject({
        method: 'POST',
        url: `/api/merchant/${op}`,
        headers: { 'content-type': 'application/json' },
        payload: withRawMember(signed(merchant, { order_no: '1'.repeat(22) }), 'deep', raw),
      });
      expect([res.statusCode, res.json().code, res.json().data?.errors?.[0]?.field]).toEqual([400, 40000, 'deep']);
    },
  );

  it.each(deepCases.flatMap(([kind, raw]) => [['sandbox', kind, raw] as const, ['epay', kind, raw] as const]))(
    'channel notify (%s, POST): a %s-valued parameter 5,000 deep beside a well-formed sign is 40000',
    async (adapter, _kind, raw) => {
      const channelId = adapter === 'sandbox' ? sandboxChannel : epayChannel;
      const fields = {
        out_trade_no: '1'.repeat(22),
        amount: '10.00',
        money: '10.00',
        pid: '1001',
        trade_status: 'SUCCESS',
        sign: adapter === 'sandbox' ? 'a'.repeat(64) : 'a'.repeat(32),
      };
      const res = await api.app.inject({
        method: 'POST',
        url: `/api/channel/notify/${channelId}`,
        headers: { 'content-type': 'application/json' },
        payload: withRawMember(fields, 'deep', raw),
      });
      expect([res.statusCode, res.json().code, res.json().data?.errors?.[0]?.field]).toEqual([400, 40000, 'deep']);
    },
  );

  it.each([
    ['a key repeated 5,000 times', 40000, `sign=${'a'.repeat(64)}&${Array.from({ length: DEEP }, () => 'out_trade_no=1').join('&')}`],
    ['a bracketed key 5,000 deep (a plain name here, not nesting)', 40102, `sign=${'a'.repeat(64)}&out_trade_no${'[a]'.repeat(DEEP)}=1`],
  ])('channel notify (GET): %s answers %p, never 5xx', async (_name, code, query) => {
    for (const channelId of [sandboxChannel, epayChannel]) {
      const res = await api.app.inject({ method: 'GET', url: `/api/channel/notify/${channelId}?${query}` });
      expect([res.statusCode < 500, res.json().code]).toEqual([true, code]);
    }
  });

  it('nested and oversized bodies and queries on every route, the notify routes included: never a 5xx', async () => {
    const routes: [string, string][] = [
      ...MERCHANT_OPERATIONS.map((op): [string, string] => ['POST', `/api/merchant/${op}`]),
      ...[String(sandboxChannel), String(epayChannel), '999999', 'x'].flatMap((id): [string, string][] => [
        ['POST', `/api/channel/notify/${id}`],
        ['GET', `/api/channel/notify/${id}`],
      ]),
      ...['regionData', 'provinceList', 'cityList', 'districtList'].map((op): [string, string] => ['GET', `/addons/paychannel/channel/processor/${op}`]),
      ['GET', `/sandbox/checkout/${'1'.repeat(22)}`],
      ['POST', `/sandbox/checkout/${'1'.repeat(22)}/pay`],
      ['POST', `/sandbox/checkout/${'1'.repeat(22)}/fail`],
      ...['/health', '/ready', '/metrics', '/docs', '/docs-json', '/nowhere'].map((path): [string, string] => ['GET', path]),
      ['POST', '/health'],
    ];
    const query = fc.oneof(
      { weight: 3, arbitrary: fc.constant('') },
      {
        weight: 1,
        arbitrary: fc.integer({ min: 1, max: 3_000 }).map((n) => `sign=${'a'.repeat(64)}&${Array.from({ length: n }, (_, i) => `k=${i}`).join('&')}`),
      },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 2_000 }).map((n) => `a${'[b]'.repeat(n)}=1&token=${'c'.repeat(n)}`) },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 6_000 }).map((n) => `province=${'%E5%B9%BF'.repeat(n)}`) },
    );
    // The value alone as the body, or beside parameters that get a request past the cheap checks (merchant auth, a notification's sign).
    const body = fc.oneof(
      { weight: 1, arbitrary: nestedOrHuge },
      { weight: 2, arbitrary: nestedOrHuge.map((raw) => withRawMember(signed(merchant, { order_no: '1'.repeat(22) }), 'v', raw)) },
      {
        weight: 2,
        arbitrary: nestedOrHuge.map((raw) =>
          withRawMember({ out_trade_no: '1'.repeat(22), amount: '1.00', trade_status: 'SUCCESS', sign: 'b'.repeat(64) }, 'v', raw),
        ),
      },
    );
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(query, body, fc.boolean(), async (q, payload, asForm) => {
        for (const [method, path] of routes) {
          const res = await api.app.inject({
            method: method as 'GET' | 'POST',
            url: q ? `${path}?${q}` : path,
            headers: { 'content-type': asForm ? 'application/x-www-form-urlencoded' : 'application/json' },
            payload: asForm ? `v=${encodeURIComponent(payload)}` : payload,
          });
          sent++;
          if (res.statusCode >= 500) throw new Error(`${method} ${path}: HTTP ${res.statusCode} ${res.body.slice(0, 200)}`);
        }
      }),
      { seed: SEED + 4, numRuns: RUNS, endOnFailure: true },
    );
    expect(sent).toBe(RUNS * routes.length);
  }, 120_000);

  it('control: the unmutated requests pass, and a pure placement change (same map) is the same request', async () => {
    const body = signed(merchant, { category: 'processor' });
    expect((await send('/api/merchant/getPayChannels', body)).code).toBe(1);
    const moved = signed(merchant, { category: 'processor' });
    delete moved.category;
    expect((await send('/api/merchant/getPayChannels', moved, '?category=processor')).code).toBe(1);
  });
});
