import type { CashierAdapterName, PayMode } from '@app/channels';

/**
 * The payer's device as the cashier reads its User-Agent (SPEC 6): inside WeChat
 * (`MicroMessenger`, WeChat's own browser on phones and its desktop app), inside the Alipay app
 * (`AlipayClient`), a phone browser, or else a computer.
 */
export type PayerDevice = 'desktop' | 'phone' | 'wechat' | 'alipay';

const PHONE = /Mobi|Android|iPhone|iPod|iPad|HarmonyOS|OpenHarmony|Windows Phone|BlackBerry|Opera Mini/i;

export function payerDevice(userAgent: string | undefined): PayerDevice {
  const ua = userAgent ?? '';
  if (/MicroMessenger/i.test(ua)) return 'wechat';
  if (/AlipayClient/i.test(ua)) return 'alipay';
  return PHONE.test(ua) ? 'phone' : 'desktop';
}

/**
 * The mode each device can finish, by provider; null where none can: WeChat blocks Alipay's pages
 * and the Alipay app blocks WeChat's, so the payer must open the page elsewhere.
 */
const DEVICE_MODES: Record<CashierAdapterName, Record<PayerDevice, PayMode | null>> = {
  alipay: { desktop: 'page', phone: 'wap', alipay: 'wap', wechat: null },
  wechatpay: { desktop: 'native', phone: 'h5', wechat: 'jsapi', alipay: null },
};

/** The devices a payer can move to, in the order the page suggests them. */
const OTHER_DEVICES: PayerDevice[] = ['phone', 'wechat', 'desktop'];

export type ModeChoice = { mode: PayMode } | { mode: null; instead: PayerDevice[] };

/** The device's mode when the channel allows it; else the other devices whose mode it allows. */
export function cashierMode(provider: CashierAdapterName, device: PayerDevice, allowed: readonly PayMode[]): ModeChoice {
  const mode = DEVICE_MODES[provider][device];
  if (mode && allowed.includes(mode)) return { mode };
  const instead = OTHER_DEVICES.filter((other) => other !== device).filter((other) => {
    const theirs = DEVICE_MODES[provider][other];
    return theirs !== null && allowed.includes(theirs);
  });
  return { mode: null, instead };
}
