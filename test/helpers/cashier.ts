/** User agents of the devices the cashier tells apart (SPEC 6): a computer, a phone browser, WeChat's browser, the Alipay app. */
export const USER_AGENTS = {
  desktop: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36',
  phone: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  wechat:
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.50(0x1800323c) NetType/WIFI Language/zh_CN',
  alipay:
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Ariver/1.1.0 AliApp(AP/10.6.10.6000) Nebula WK RVKType(0) AlipayDefined(nt:WIFI,ws:390|844|3.0) AlipayClient/10.6.10.6000 Language/zh-Hans',
} as const;

export type Device = keyof typeof USER_AGENTS;

/** The href of the cashier's pay link (`id="pay"`), or null when the screen has none. */
export function payLink(html: string): string | null {
  const m = /<a class="button [^"]*" id="pay" href="([^"]+)"/.exec(html);
  return m
    ? m[1]
        .replace(/&amp;/g, '&')
        .replace(/&quot;/g, '"')
        .replace(/&#39;/g, "'")
    : null;
}

/**
 * What a payer's browser does with pay_url, outside a browser: the cashier as `device` shows it
 * (WeChat's Native trade is opened as the page is shown) and, where it has a pay link (Alipay's
 * signed gateway URL), the provider's page behind it (the fake opens the trade when it verifies
 * the request).
 */
export async function openCashier(payUrl: string, device: Device = 'desktop'): Promise<{ cashier: string; provider: string | null }> {
  const cashier = await (await fetch(payUrl, { headers: { 'user-agent': USER_AGENTS[device] } })).text();
  const link = payLink(cashier);
  const provider = link ? await (await fetch(link, { headers: { 'user-agent': USER_AGENTS[device] } })).text() : null;
  return { cashier, provider };
}
