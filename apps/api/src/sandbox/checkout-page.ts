import { type Lang, negotiateLang, isLang } from '../portal/i18n/i18n';

/** The sandbox checkout's HTML: small, escaped, no scripts, usable without CSS. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

const EN = {
  banner: '<strong>Sandbox checkout</strong> (test mode: no real money moves)',
  title: 'Pay ¥{amount} to {merchant}',
  heading: 'Pay {merchant}',
  merchant: 'Merchant',
  order: 'Order',
  method: 'Method',
  status: 'Status',
  pay: 'Pay ¥{amount}',
  fail: 'Fail payment',
  nothingLeft: 'This order is <strong>{status}</strong>; there is nothing left to pay.',
  note: 'Pay and Fail make the sandbox send this service a signed channel notification, as a real processor would.',
  back: 'Back to the order',
  notFoundTitle: 'Checkout not found',
  notFound: 'This payment link is not valid. Ask the merchant for a new one.',
  nothingToPayTitle: 'Nothing to pay',
  alreadyDone: 'This order is already {status}.',
  refusedTitle: 'The service refused the notification',
  refused: 'HTTP {http}. Try again.',
  paidTitle: 'Payment succeeded',
  paid: '¥{amount} paid for order {order}. The merchant is notified.',
  failedTitle: 'Payment failed',
  failed: 'Order {order} is cancelled. The merchant is notified.',
  'status.pending': 'pending',
  'status.paid': 'paid',
  'status.confirmed': 'confirmed',
  'status.completed': 'completed',
  'status.cancelled': 'cancelled',
  'method.alipay': 'Alipay',
  'method.wxpay': 'WeChat Pay',
  'method.bank': 'Bank card',
};
type Key = keyof typeof EN;

const ZH_CN: Record<Key, string> = {
  banner: '<strong>沙箱收银台</strong>（测试模式：不会有真实资金流动）',
  title: '向 {merchant} 支付 ¥{amount}',
  heading: '向 {merchant} 付款',
  merchant: '商户',
  order: '订单',
  method: '支付方式',
  status: '状态',
  pay: '支付 ¥{amount}',
  fail: '模拟支付失败',
  nothingLeft: '此订单的状态是<strong>{status}</strong>，无需再支付。',
  note: '“支付”和“模拟支付失败”会让沙箱像真实支付机构一样，向本服务发送一条签名的渠道通知。',
  back: '返回订单',
  notFoundTitle: '找不到收银台',
  notFound: '此支付链接无效，请向商户索取新的链接。',
  nothingToPayTitle: '无需支付',
  alreadyDone: '此订单的状态已是“{status}”。',
  refusedTitle: '服务拒绝了这条通知',
  refused: 'HTTP {http}，请重试。',
  paidTitle: '支付成功',
  paid: '订单 {order} 已支付 ¥{amount}，已通知商户。',
  failedTitle: '支付失败',
  failed: '订单 {order} 已取消，已通知商户。',
  'status.pending': '待支付',
  'status.paid': '已支付',
  'status.confirmed': '已确认',
  'status.completed': '已完成',
  'status.cancelled': '已取消',
  'method.alipay': '支付宝',
  'method.wxpay': '微信支付',
  'method.bank': '银行卡',
};

const TEXTS: Record<Lang, Record<Key, string>> = { en: EN, 'zh-CN': ZH_CN };

/** The page's language: `?lang=` as the portal's switch sets it, else the browser's Accept-Language. */
export function checkoutLang(asked: unknown, acceptLanguage: string | undefined): Lang {
  return isLang(asked) ? asked : negotiateLang(acceptLanguage);
}

/** A text of `lang`, its {params} escaped (the texts themselves are ours and may hold markup). */
function text(lang: Lang, key: Key, params: Record<string, string> = {}): string {
  return TEXTS[lang][key].replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? escapeHtml(params[name]) : whole));
}

/** A word of ours for a stored code, or the code itself when there is none. */
function word(lang: Lang, prefix: 'status' | 'method', code: string | null): string {
  if (code === null) return '-';
  const key = `${prefix}.${code}`;
  return key in EN ? TEXTS[lang][key as Key] : code;
}

/** `url` with lang set: the switch's links and the forms carry the language through the pay and fail answers. */
function withLang(url: string, lang: Lang): string {
  const [path, query = ''] = url.split('?');
  const params = new URLSearchParams(query);
  params.set('lang', lang);
  return `${path}?${params.toString()}`;
}

function layout(lang: Lang, titleHtml: string, body: string, pageUrl: string | null): string {
  const switcher = pageUrl
    ? `<nav class="langs" aria-label="Language / 语言">
<a href="${escapeHtml(withLang(pageUrl, 'en'))}" lang="en" hreflang="en"${lang === 'en' ? ' aria-current="true"' : ''}>English</a>
<a href="${escapeHtml(withLang(pageUrl, 'zh-CN'))}" lang="zh-CN" hreflang="zh-CN"${lang === 'zh-CN' ? ' aria-current="true"' : ''}>简体中文</a>
</nav>`
    : '';
  return `<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${titleHtml}</title>
<style>
body{font-family:system-ui,"Noto Sans CJK SC","PingFang SC","Microsoft YaHei",sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#222}
.langs{display:flex;gap:1rem;justify-content:flex-end;font-size:.9rem}
.langs a[aria-current]{font-weight:600;color:#222;text-decoration:none}
.amount{font-size:2.2rem;font-weight:600;margin:.5rem 0}
dl{display:grid;grid-template-columns:auto 1fr;gap:.3rem 1rem}dt{color:#666}dd{margin:0;overflow-wrap:anywhere}
form{display:inline-block;margin:1rem .5rem 0 0}
button{font-size:1rem;padding:.6rem 1.4rem;border-radius:.4rem;border:1px solid #888;cursor:pointer}
.pay{background:#1a7f37;color:#fff;border-color:#1a7f37}
.note{color:#666;font-size:.85rem;margin-top:2rem}
</style>
</head>
<body>
${switcher}
<p>${text(lang, 'banner')}</p>
${body}
</body>
</html>
`;
}

export interface CheckoutView {
  orderNo: string;
  merchantName: string;
  amount: string;
  payMethod: string | null;
  status: string;
  token: string;
}

export function checkoutPage(v: CheckoutView, lang: Lang): string {
  const orderNo = escapeHtml(v.orderNo);
  const token = escapeHtml(v.token);
  const action = (button: 'pay' | 'fail') => escapeHtml(withLang(`/sandbox/checkout/${v.orderNo}/${button}`, lang));
  const actions =
    v.status === 'pending'
      ? `<form method="post" action="${action('pay')}">
<input type="hidden" name="token" value="${token}">
<button type="submit" class="pay">${text(lang, 'pay', { amount: v.amount })}</button>
</form>
<form method="post" action="${action('fail')}">
<input type="hidden" name="token" value="${token}">
<button type="submit">${text(lang, 'fail')}</button>
</form>`
      : `<p>${text(lang, 'nothingLeft', { status: word(lang, 'status', v.status) })}</p>`;
  return layout(
    lang,
    text(lang, 'title', { amount: v.amount, merchant: v.merchantName }),
    `<h1>${text(lang, 'heading', { merchant: v.merchantName })}</h1>
<p class="amount">¥${escapeHtml(v.amount)}</p>
<dl>
<dt>${text(lang, 'merchant')}</dt><dd>${escapeHtml(v.merchantName)}</dd>
<dt>${text(lang, 'order')}</dt><dd>${orderNo}</dd>
<dt>${text(lang, 'method')}</dt><dd>${escapeHtml(word(lang, 'method', v.payMethod))}</dd>
<dt>${text(lang, 'status')}</dt><dd>${escapeHtml(word(lang, 'status', v.status))}</dd>
</dl>
${actions}
<p class="note">${text(lang, 'note')}</p>`,
    `/sandbox/checkout/${v.orderNo}?token=${encodeURIComponent(v.token)}`,
  );
}

/** What the sandbox answers after Pay or Fail, or for a link that is not valid. */
export type CheckoutResult =
  | { kind: 'notFound' }
  | { kind: 'alreadyDone'; status: string }
  | { kind: 'refused'; http: number }
  | { kind: 'paid'; amount: string; orderNo: string }
  | { kind: 'failed'; orderNo: string };

const RESULT_TEXTS: Record<CheckoutResult['kind'], [Key, Key]> = {
  notFound: ['notFoundTitle', 'notFound'],
  alreadyDone: ['nothingToPayTitle', 'alreadyDone'],
  refused: ['refusedTitle', 'refused'],
  paid: ['paidTitle', 'paid'],
  failed: ['failedTitle', 'failed'],
};

/** `backUrl`: the checkout page of the order, also where the language switch leads (a POST's answer cannot be reloaded). */
export function resultPage(result: CheckoutResult, lang: Lang, backUrl?: string): string {
  const [titleKey, messageKey] = RESULT_TEXTS[result.kind];
  const params: Record<string, string> = {};
  if (result.kind === 'alreadyDone') params.status = word(lang, 'status', result.status);
  if (result.kind === 'refused') params.http = String(result.http);
  if (result.kind === 'paid') params.amount = result.amount;
  if (result.kind === 'paid' || result.kind === 'failed') params.order = result.orderNo;
  const back = backUrl ? `<p><a href="${escapeHtml(withLang(backUrl, lang))}">${text(lang, 'back')}</a></p>` : '';
  const title = text(lang, titleKey);
  return layout(lang, title, `<h1>${title}</h1>\n<p>${text(lang, messageKey, params)}</p>\n${back}`, backUrl ?? null);
}
