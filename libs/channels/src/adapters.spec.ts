import { createHmac } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ChannelError } from './channel-adapter';
import { parseChannelConfig } from './channel-config';
import { EpayAdapter, epaySign } from './epay.adapter';
import { SandboxAdapter, sandboxCheckoutToken, signSandboxNotification, verifySandboxCheckoutToken } from './sandbox.adapter';

describe('epaySign', () => {
  it('md5 of the sorted non-empty parameters but sign and sign_type, key appended', () => {
    // md5("a=1&b=2&c=3KEY")
    expect(epaySign({ c: '3', a: '1', b: '2', empty: '', sign: 'x', sign_type: 'MD5' }, 'KEY')).toBe('2a06839ab762f3729a21ad3bf3558c31');
  });
  it('verifies its own notifications and refuses changed ones', () => {
    const adapter = new EpayAdapter({ merchant_no: '7', secret_key: 'k' }, undefined);
    const params: Record<string, string> = { pid: '7', out_trade_no: 'A1', trade_no: 'T1', money: '1.50', trade_status: 'TRADE_SUCCESS', type: 'alipay' };
    const sign = epaySign(params, 'k');
    expect(adapter.verifyNotification({ ...params, sign, sign_type: 'MD5' })).toEqual({ orderNo: 'A1', channelTradeNo: 'T1', amountFen: 150, outcome: 'paid' });
    expect(adapter.verifyNotification({ ...params, money: '1.51', sign })).toBeNull();
    expect(adapter.verifyNotification({ ...params, sign: sign.toUpperCase() })).not.toBeNull();
  });
});

// SPEC 6: the epay key travels in the query string of api.php, so the gateway must be https.
describe('epay gateway_url over http', () => {
  let server: Server;
  let requests = 0;
  let gateway: string;
  const query = { orderNo: '20260101000000123456789', amountFen: 100, channelTradeNo: null, paidAt: null };

  beforeAll(async () => {
    server = createServer((_req, res) => {
      requests++;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ code: 1, status: 1, money: '1.00', trade_no: 'T1' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    gateway = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('is never called without CHANNEL_ALLOW_HTTP: no query, no pay_url', async () => {
    const adapter = new EpayAdapter({ merchant_no: '7', secret_key: 'k', gateway_url: gateway }, undefined);
    const before = requests;
    await expect(adapter.queryPayment(query, AbortSignal.timeout(2000))).rejects.toThrow(ChannelError);
    await expect(adapter.queryPayment(query, AbortSignal.timeout(2000))).rejects.toThrow(/https/);
    await expect(
      adapter.createPayment({
        orderNo: query.orderNo,
        amountFen: 100,
        payMethod: 'alipay',
        subject: 's',
        notifyUrl: 'https://x/n',
        returnUrl: 'https://x',
        expiresAt: new Date(),
      }),
    ).rejects.toThrow(/https/);
    expect(requests).toBe(before);
  });

  it('is called when CHANNEL_ALLOW_HTTP=true (local test gateways)', async () => {
    const adapter = new EpayAdapter({ merchant_no: '7', secret_key: 'k', gateway_url: gateway }, undefined, true);
    const before = requests;
    expect(await adapter.queryPayment(query, AbortSignal.timeout(2000))).toMatchObject({ state: 'paid', amountFen: 100 });
    expect(requests).toBe(before + 1);
  });

  it('is refused in a channel config unless allowed; https always passes', () => {
    expect(() => parseChannelConfig({ gateway_url: 'http://pay.example/' })).toThrow(/gateway_url must be https.*CHANNEL_ALLOW_HTTP=true/);
    expect(parseChannelConfig({ gateway_url: 'http://pay.example/' }, { allowHttpGateway: true })).toEqual({ gateway_url: 'http://pay.example/' });
    expect(parseChannelConfig({ gateway_url: 'https://pay.example/' })).toEqual({ gateway_url: 'https://pay.example/' });
    // A CONNECT proxy is plain http; the tunnel to the gateway is TLS.
    expect(parseChannelConfig({ proxy_url: 'http://proxy.internal:3128' })).toEqual({ proxy_url: 'http://proxy.internal:3128' });
  });
});

describe('sandbox', () => {
  it('checkout tokens bind one order', () => {
    const token = sandboxCheckoutToken('s', '1');
    expect(verifySandboxCheckoutToken('s', '1', token)).toBe(true);
    expect(verifySandboxCheckoutToken('s', '2', token)).toBe(false);
    expect(verifySandboxCheckoutToken('t', '1', token)).toBe(false);
    expect(verifySandboxCheckoutToken('s', '1', undefined)).toBe(false);
  });
  it('keeps its wire formats: the token is HMAC-SHA256("checkout:" + order_no), accepted in any case', () => {
    const token = createHmac('sha256', 's').update('checkout:1').digest('hex');
    expect(sandboxCheckoutToken('s', '1')).toBe(token);
    expect(verifySandboxCheckoutToken('s', '1', token.toUpperCase())).toBe(true);
    expect(verifySandboxCheckoutToken('s', '1', token.slice(1))).toBe(false);
  });
  it('verifies its own signed notifications only', () => {
    const adapter = new SandboxAdapter('secret', 'http://x');
    const n = signSandboxNotification('secret', '20260101000000123456789', 1234, 'failed');
    expect(adapter.verifyNotification({ ...n })).toMatchObject({ amountFen: 1234, outcome: 'failed' });
    expect(adapter.verifyNotification({ ...n, trade_status: 'SUCCESS' })).toBeNull();
    expect(new SandboxAdapter('other', 'http://x').verifyNotification({ ...n })).toBeNull();
  });
});
