import { cashierMode, payerDevice } from './payer-device';

describe('payerDevice', () => {
  it.each([
    ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36', 'desktop'],
    ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15', 'desktop'],
    ['Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1', 'phone'],
    ['Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Mobile Safari/537.36', 'phone'],
    ['Mozilla/5.0 (Linux; Android 12; HarmonyOS; NOH-AL00) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/99.0 Mobile Safari/537.36', 'phone'],
    [
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.50(0x1800323c) NetType/WIFI',
      'wechat',
    ],
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/81.0 Safari/537.36 NetType/WIFI MicroMessenger/7.0.20.1781(0x6700143B) WindowsWechat',
      'wechat',
    ],
    [
      'Mozilla/5.0 (Linux; Android 14; V2309A) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/101.0 Mobile Safari/537.36 AlipayClient/10.5.86.8000 Language/zh-Hans',
      'alipay',
    ],
    [undefined, 'desktop'],
  ])('%s is %s', (ua, device) => expect(payerDevice(ua)).toBe(device));
});

describe('cashierMode', () => {
  it('sends each device down its own mode when the channel allows it', () => {
    expect(cashierMode('alipay', 'desktop', ['page', 'wap'])).toEqual({ mode: 'page' });
    expect(cashierMode('alipay', 'phone', ['page', 'wap'])).toEqual({ mode: 'wap' });
    expect(cashierMode('alipay', 'alipay', ['page', 'wap'])).toEqual({ mode: 'wap' });
    expect(cashierMode('wechatpay', 'desktop', ['native', 'h5', 'jsapi'])).toEqual({ mode: 'native' });
    expect(cashierMode('wechatpay', 'phone', ['native', 'h5', 'jsapi'])).toEqual({ mode: 'h5' });
    expect(cashierMode('wechatpay', 'wechat', ['native', 'h5', 'jsapi'])).toEqual({ mode: 'jsapi' });
  });
  it('names the devices that can pay instead, never a mode the channel does not allow', () => {
    expect(cashierMode('wechatpay', 'phone', ['native', 'jsapi'])).toEqual({ mode: null, instead: ['wechat', 'desktop'] });
    expect(cashierMode('wechatpay', 'desktop', ['h5'])).toEqual({ mode: null, instead: ['phone'] });
    expect(cashierMode('alipay', 'desktop', ['wap'])).toEqual({ mode: null, instead: ['phone'] });
    // WeChat blocks Alipay's pages, and the Alipay app WeChat's, whatever the channel allows.
    expect(cashierMode('alipay', 'wechat', ['page', 'wap'])).toEqual({ mode: null, instead: ['phone', 'desktop'] });
    expect(cashierMode('wechatpay', 'alipay', ['native', 'h5', 'jsapi'])).toEqual({ mode: null, instead: ['phone', 'wechat', 'desktop'] });
  });
});
