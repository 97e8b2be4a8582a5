import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { verify } from '@app/signature';
import { MerchantClient, canonicalString, signParams } from './merchant-client';

interface Vectors {
  api_secret: string;
  cases: { name: string; query: Record<string, unknown>; body: Record<string, unknown>; canonical: string; signature: string }[];
}
const vectors = JSON.parse(readFileSync(join(__dirname, '../../shared/vectors/signature.json'), 'utf8')) as Vectors;

function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const o = value as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
    .join(',')}}`;
}

describe('examples/merchant-client.ts against the shared vectors', () => {
  it.each(vectors.cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const params = { ...c.query, ...c.body };
    expect(canonicalString(params)).toBe(c.canonical);
    expect(signParams(params, vectors.api_secret)).toBe(c.signature);
  });

  it('verifies a callback body and its Standard Webhooks headers, and refuses a changed or stale one', () => {
    const cb = vectors.cases.find((c) => c.body.event)!;
    const client = new MerchantClient('http://unused', String(cb.body.api_key), vectors.api_secret);
    const body = { ...cb.body, signature: cb.signature };
    // The vector's own timestamp is long past: a replay, refused like the other clients refuse it.
    expect(client.verifyCallbackBody(body)).toBe(false);
    const fresh = { ...cb.body, timestamp: Math.floor(Date.now() / 1000) };
    const signedNow = { ...fresh, signature: signParams(fresh, vectors.api_secret) };
    expect(client.verifyCallbackBody(signedNow)).toBe(true);
    expect(client.verifyCallbackBody({ ...signedNow, merchant_actual_amount: 999999 })).toBe(false);

    const raw = JSON.stringify(signedNow);
    const ts = String(Math.floor(Date.now() / 1000));
    const sig = createHmac('sha256', vectors.api_secret).update(`${cb.body.event_id}.${ts}.${raw}`).digest('base64');
    const headers = { 'webhook-id': String(cb.body.event_id), 'webhook-timestamp': ts, 'webhook-signature': `v1,${sig}` };
    expect(client.verifyCallbackHeaders(headers, raw)).toBe(true);
    expect(client.verifyCallbackHeaders(headers, `${raw} `)).toBe(false);
    expect(client.verifyCallbackHeaders({ ...headers, 'webhook-timestamp': String(Number(ts) - 3600) }, raw)).toBe(false);
    expect(client.verifyCallback(headers, raw)).toEqual(signedNow);
    expect(client.verifyCallback(headers, raw.replace('"order.paid"', '"order.cancelled"'))).toBeNull();
  });

  describe("during a rotation's grace (SPEC 3: both header entries, the body signed with the previous secret)", () => {
    const cb = vectors.cases.find((c) => c.body.event)!;
    const apiKey = String(cb.body.api_key);
    const previous = 'sk_previous_secret_of_the_example_merchant';
    const current = vectors.api_secret;
    const rotationCallback = (bodySecret: string) => {
      const fields = { ...cb.body, timestamp: Math.floor(Date.now() / 1000) };
      const raw = JSON.stringify({ ...fields, signature: signParams(fields, bodySecret) });
      const ts = String(fields.timestamp);
      const entry = (secret: string) => `v1,${createHmac('sha256', secret).update(`${cb.body.event_id}.${ts}.${raw}`).digest('base64')}`;
      return { raw, headers: { 'webhook-id': String(cb.body.event_id), 'webhook-timestamp': ts, 'webhook-signature': `${entry(current)} ${entry(previous)}` } };
    };
    const checks = (client: MerchantClient, { raw, headers }: { raw: string; headers: Record<string, string> }) => [
      client.verifyCallbackHeaders(headers, raw),
      client.verifyCallbackBody(JSON.parse(raw) as Record<string, unknown>),
    ];

    it('a receiver still holding only the old secret accepts, both checks', () => {
      expect(checks(new MerchantClient('http://unused', apiKey, previous), rotationCallback(previous))).toEqual([true, true]);
    });

    it('a receiver holding both accepts a body signed with either', () => {
      const both = new MerchantClient('http://unused', apiKey, current, previous);
      expect(checks(both, rotationCallback(previous))).toEqual([true, true]);
      expect(checks(both, rotationCallback(current))).toEqual([true, true]);
    });

    it('a body signed with a secret the receiver does not hold is refused', () => {
      expect(checks(new MerchantClient('http://unused', apiKey, current), rotationCallback(previous))).toEqual([true, false]);
      expect(checks(new MerchantClient('http://unused', apiKey, 'sk_someone_else'), rotationCallback(previous))).toEqual([false, false]);
    });
  });

  it('says the base URL is missing instead of calling a relative address', async () => {
    await expect(new MerchantClient('', 'mk_test_example', 'sk_x').call('getPayChannels')).rejects.toThrow(/the base URL is missing/);
    await expect(new MerchantClient('pay.example.com/api', 'mk_test_example', 'sk_x').call('getPayChannels')).rejects.toThrow(/not an absolute http/);
  });
});

describe('examples/sign.sh against the shared vectors', () => {
  it.each(vectors.cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const pairs = Object.entries({ ...c.query, ...c.body })
      .filter(([, v]) => v !== null)
      .map(([k, v]) => `${k}=${typeof v === 'object' ? canonicalJson(v) : String(v)}`);
    const out = execFileSync('bash', [join(__dirname, 'sign.sh'), vectors.api_secret, ...pairs], { encoding: 'utf8' });
    expect(out.trim()).toBe(c.signature);
  });
});

describe('examples/merchant-client.ts money-out and callback-tool methods', () => {
  let server: Server;
  const seen: { path: string; body: Record<string, unknown> }[] = [];
  const secret = 'sk_example_secret_do_not_use_0123456789';
  let client: MerchantClient;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
      req.on('end', () => {
        seen.push({ path: req.url ?? '', body: JSON.parse(raw) as Record<string, unknown> });
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 1, msg: 'ok', time: '0', data: null }));
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    client = new MerchantClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api`, 'mk_test_example', secret);
  });
  afterAll(() => new Promise((done) => server.close(done)));

  it("call each operation with the contract's parameter names, signed as the service verifies, optional ones left out", async () => {
    await client.orderClose('2025112112000012345678');
    await client.refundCreate({ orderNo: '2025112112000012345678', refundAmount: '30.00', merchantRefundNo: 'R-1', reason: 'returned' });
    await client.refundQuery({ refundNo: '2025112312000087654321' });
    await client.refundQuery({ merchantRefundNo: 'R-1' });
    await client.refundQueryList('2025112112000012345678');
    await client.createSellOrder({
      cnyAmount: '50.00',
      paychannelId: 3,
      payeeName: '张三',
      payeeAccount: '6222021234561234',
      payeeBank: '中国工商银行',
      merchantOrderNo: 'P-1',
    });
    await client.callbackResend('2025112112000012345678');
    await client.callbackQueryList('2025112112000012345678');
    await client.callbackRecover(1763700000);
    await client.callbackRecover(1763700000, 1763786400);
    await client.callbackTest();
    await client.callbackTest('https://shop.example/notify');
    await client.balanceQuery();
    const own = (body: Record<string, unknown>): Record<string, unknown> =>
      Object.fromEntries(Object.entries(body).filter(([k]) => !['api_key', 'timestamp', 'nonce', 'signature'].includes(k)));
    expect(seen.map((r) => [r.path, own(r.body)])).toEqual([
      ['/api/merchant/orderClose', { order_no: '2025112112000012345678' }],
      ['/api/merchant/refundCreate', { order_no: '2025112112000012345678', refund_amount: '30.00', merchant_refund_no: 'R-1', reason: 'returned' }],
      ['/api/merchant/refundQuery', { refund_no: '2025112312000087654321' }],
      ['/api/merchant/refundQuery', { merchant_refund_no: 'R-1' }],
      ['/api/merchant/refundQueryList', { order_no: '2025112112000012345678' }],
      [
        '/api/merchant/createSellOrder',
        { cny_amount: '50.00', paychannel_id: 3, payee_name: '张三', payee_account: '6222021234561234', payee_bank: '中国工商银行', merchant_order_no: 'P-1' },
      ],
      ['/api/merchant/callbackResend', { order_no: '2025112112000012345678' }],
      ['/api/merchant/callbackQueryList', { order_no: '2025112112000012345678' }],
      ['/api/merchant/callbackRecover', { start_time: 1763700000 }],
      ['/api/merchant/callbackRecover', { start_time: 1763700000, end_time: 1763786400 }],
      ['/api/merchant/callbackTest', {}],
      ['/api/merchant/callbackTest', { url: 'https://shop.example/notify' }],
      ['/api/merchant/balanceQuery', {}],
    ]);
    for (const { body } of seen) {
      const { signature, ...rest } = body;
      expect(verify(rest, signature as string, secret)).toBe(true);
      expect(body.api_key).toBe('mk_test_example');
    }
  });
});
