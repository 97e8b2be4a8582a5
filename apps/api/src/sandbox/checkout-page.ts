import { type Lang, escapeHtml, notFoundPayPage, payMethodWord, payPageLang, payPageLayout, payText, withLang } from '../pay-pages/pay-page';
import { type PaySummary, outcomeAction, paySheet, payerOutcome, sheetTitle } from '../pay-pages/pay-sheet';

/**
 * The sandbox checkout's HTML, on the pay pages' layout, sheet and texts: small, escaped, no
 * scripts, usable without CSS. What a tester needs to know of its buttons is in the README; the
 * page speaks to the payer, under a banner saying the payment is a test.
 */

/** The page's language: `?lang=` as the portal's switch sets it, else the browser's Accept-Language. */
export const checkoutLang = payPageLang;

export interface CheckoutView extends PaySummary {
  orderNo: string;
  payMethod: string | null;
  status: string;
  updatedAt: Date;
  token: string;
}

/** What the page answers to: the order as it is, after a failed attempt (Fail), or the service refusing the sandbox's notification. */
export type CheckoutNotice = { kind: 'failed' } | { kind: 'refused'; http: number } | null;

const pagePath = (v: CheckoutView): string => `/sandbox/checkout/${v.orderNo}?token=${encodeURIComponent(v.token)}`;

/**
 * The checkout of an order, whatever became of it: open, it offers Pay and Fail (after a failed
 * attempt or a refused notification, with what happened above them); paid, closed or out of
 * time, it says so in the payer's words, with the way back to the shop.
 */
export function checkoutPage(v: CheckoutView, lang: Lang, notice: CheckoutNotice = null, now = new Date()): string {
  const t = payText(lang);
  const outcome = payerOutcome(v, now);
  let action: string;
  if (outcome === 'open') {
    const form = (
      button: 'pay' | 'fail',
      label: string,
      style: string,
    ) => `<form method="post" action="${escapeHtml(withLang(`/sandbox/checkout/${v.orderNo}/${button}`, lang))}">
<input type="hidden" name="token" value="${escapeHtml(v.token)}">
<button type="submit" class="${style}">${label}</button>
</form>`;
    const method = payMethodWord(lang, v.payMethod);
    const said =
      notice?.kind === 'failed'
        ? `<p class="state bad" role="alert">${t('sandbox.failedTitle')}</p>\n<p>${t('sandbox.failedBody')}</p>\n`
        : notice?.kind === 'refused'
          ? `<p class="state bad" role="alert">${t('sandbox.refusedTitle')}</p>\n<p>${t('sandbox.refused', { http: String(notice.http) })}</p>\n`
          : '';
    action = `${said}${form('pay', method ? t('sandbox.payWith', { amount: v.amount, method }) : t('sandbox.pay', { amount: v.amount }), 'button')}
${form('fail', t('sandbox.fail'), 'button plain')}`;
  } else {
    action = outcomeAction(t, v, outcome);
  }
  const screen = outcome !== 'open' ? outcome : notice ? notice.kind : 'pay';
  return payPageLayout({
    lang,
    titleHtml: notice?.kind === 'failed' ? `${t('sandbox.failedTitle')} · ${escapeHtml(v.merchantName)}` : sheetTitle(t, v, outcome),
    pageUrl: pagePath(v),
    body: `<p class="banner">${t('sandbox.banner')}</p>\n${paySheet(t, v, outcome === 'open', screen, action, now)}`,
  });
}

/** The page for a link that is not valid: the same for an unknown order and a wrong token. */
export function checkoutNotFound(lang: Lang): string {
  return notFoundPayPage(lang);
}
