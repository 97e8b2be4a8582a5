import { createHmac } from 'node:crypto';
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
