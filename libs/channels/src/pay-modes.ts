/**
 * The flows a provider offers a payer (SPEC 6, Pay modes and the cashier): Alipay's computer
 * website pay (`page`, alipay.trade.page.pay) and phone website pay (`wap`,
 * alipay.trade.wap.pay); WeChat Pay's QR code (`native`), phone browser (`h5`) and in-WeChat
 * (`jsapi`) payments. A channel's config may narrow them (`modes`).
 */
export const PROVIDER_PAY_MODES = {
  alipay: ['page', 'wap'],
  wechatpay: ['native', 'h5', 'jsapi'],
} as const;

export type CashierAdapterName = keyof typeof PROVIDER_PAY_MODES;
export type AlipayMode = (typeof PROVIDER_PAY_MODES.alipay)[number];
export type WechatMode = (typeof PROVIDER_PAY_MODES.wechatpay)[number];
export type PayMode = AlipayMode | WechatMode;

export function isCashierAdapter(adapter: string): adapter is CashierAdapterName {
  return Object.hasOwn(PROVIDER_PAY_MODES, adapter);
}

/**
 * The modes a channel may use: its config's `modes`, else all its provider's; JSAPI only with an
 * `app_secret` (the payer's openid comes from WeChat's OAuth, which needs it).
 */
export function channelPayModes(adapter: CashierAdapterName, config: { modes?: readonly string[]; app_secret?: string }): PayMode[] {
  const all: readonly PayMode[] = PROVIDER_PAY_MODES[adapter];
  if (config.modes) return all.filter((mode) => config.modes!.includes(mode));
  return all.filter((mode) => mode !== 'jsapi' || Boolean(config.app_secret));
}
