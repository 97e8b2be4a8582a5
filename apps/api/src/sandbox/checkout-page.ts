import { type Lang, escapeHtml, notFoundPayPage, payPageLang, payPageLayout, payText, payWord, withLang } from '../pay-pages/pay-page';

/** The sandbox checkout's HTML, on the pay pages' layout and texts: small, escaped, no scripts, usable without CSS. */

/** The page's language: `?lang=` as the portal's switch sets it, else the browser's Accept-Language. */
export const checkoutLang = payPageLang;

export interface CheckoutView {
  orderNo: string;
  merchantName: string;
  amount: string;
  payMethod: string | null;
  status: string;
  token: string;
  subject: string | null;
  /** The shop's own order number, when it gave one. */
  merchantOrderNo: string | null;
}

function layout(lang: Lang, titleHtml: string, body: string, pageUrl: string | null): string {
  return payPageLayout({
    lang,
    titleHtml,
    pageUrl,
    body: `<p class="banner">${payText(lang)('sandbox.banner')}</p>\n<div class="sheet sandbox">\n${body}\n</div>`,
  });
}

export function checkoutPage(v: CheckoutView, lang: Lang): string {
  const t = payText(lang);
  const orderNo = escapeHtml(v.orderNo);
  const token = escapeHtml(v.token);
  const action = (button: 'pay' | 'fail') => escapeHtml(withLang(`/sandbox/checkout/${v.orderNo}/${button}`, lang));
  const actions =
    v.status === 'pending'
      ? `<form method="post" action="${action('pay')}">
<input type="hidden" name="token" value="${token}">
<button type="submit" class="pay">${t('sandbox.pay', { amount: v.amount })}</button>
</form>
<form method="post" action="${action('fail')}">
<input type="hidden" name="token" value="${token}">
<button type="submit">${t('sandbox.fail')}</button>
</form>`
      : `<p>${t('sandbox.nothingLeft', { status: payWord(lang, 'status', v.status) })}</p>`;
  const row = (label: string, value: string | null) => (value === null ? '' : `<dt>${label}</dt><dd>${escapeHtml(value)}</dd>\n`);
  return layout(
    lang,
    t('sandbox.title', { amount: v.amount, merchant: v.merchantName }),
    `<h1>${t('sandbox.heading', { merchant: v.merchantName })}</h1>
<p class="amount">¥${escapeHtml(v.amount)}</p>
${v.subject ? `<p class="subject">${escapeHtml(v.subject)}</p>\n` : ''}<dl>
<dt>${t('field.merchant')}</dt><dd>${escapeHtml(v.merchantName)}</dd>
${row(t('field.shopOrder'), v.merchantOrderNo)}<dt>${t('field.order')}</dt><dd>${orderNo}</dd>
<dt>${t('field.method')}</dt><dd>${escapeHtml(payWord(lang, 'method', v.payMethod))}</dd>
<dt>${t('field.status')}</dt><dd>${escapeHtml(payWord(lang, 'status', v.status))}</dd>
</dl>
${actions}
<p class="note">${t('sandbox.note')}</p>`,
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

const RESULT_TEXTS = {
  alreadyDone: ['sandbox.nothingToPayTitle', 'sandbox.alreadyDone'],
  refused: ['sandbox.refusedTitle', 'sandbox.refused'],
  paid: ['sandbox.paidTitle', 'sandbox.paid'],
  failed: ['sandbox.failedTitle', 'sandbox.failed'],
} as const;

/**
 * `backUrl`: the checkout page of the order, also where the language switch leads (a POST's answer
 * cannot be reloaded); `shop`: the order's return_url and the merchant's name, the way back to the shop.
 */
export function resultPage(result: CheckoutResult, lang: Lang, backUrl?: string, shop?: { returnUrl: string | null; merchantName: string }): string {
  if (result.kind === 'notFound') return notFoundPayPage(lang);
  const t = payText(lang);
  const [titleKey, messageKey] = RESULT_TEXTS[result.kind];
  const params: Record<string, string> = {};
  if (result.kind === 'alreadyDone') params.status = payWord(lang, 'status', result.status);
  if (result.kind === 'refused') params.http = String(result.http);
  if (result.kind === 'paid') params.amount = result.amount;
  if (result.kind === 'paid' || result.kind === 'failed') params.order = result.orderNo;
  const toShop = shop?.returnUrl
    ? `<p><a class="button plain" href="${escapeHtml(shop.returnUrl)}">${t('cashier.back', { merchant: shop.merchantName })}</a></p>\n`
    : '';
  const back = backUrl ? `<p><a href="${escapeHtml(withLang(backUrl, lang))}">${t('sandbox.back')}</a></p>` : '';
  const title = t(titleKey);
  return layout(lang, title, `<h1>${title}</h1>\n<p>${t(messageKey, params)}</p>\n${toShop}${back}`, backUrl ?? null);
}
