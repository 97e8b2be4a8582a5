import { formatShanghai } from '../portal/shanghai-time';
import { type PayText, escapeHtml } from './pay-page';

/**
 * The order as both pay pages show it to the payer (the sandbox checkout, the cashier): the
 * merchant, the amount, what is bought, the shop's order number and the time left, then one
 * action section. What became of the order is said in the payer's words, never as a stored status.
 */

/** What the payer is shown of an order (SPEC 6): merchant, subject, amount, the shop's order number, time left. */
export interface PaySummary {
  merchantName: string;
  subject: string;
  amount: string;
  /** The shop's own order number, when it gave one. */
  shopOrderNo: string | null;
  expiresAt: Date;
  /** The way back to the shop (SPEC 5 return_url), when the shop gave one. */
  returnUrl: string | null;
}

/** What the payer buys; an order made before subjects existed reads as the default would have made it (SPEC 5). */
export function payerSubject(order: { subject: string | null; merchantOrderNo: string | null; orderNo: string }): string {
  return order.subject ?? `Order ${order.merchantOrderNo ?? order.orderNo}`;
}

/** Where an order stands for its payer: it can be paid, it is paid, or it can no longer be paid (closed, or its time ran out). */
export type PayerOutcome = 'open' | 'paid' | 'closed' | 'expired';

/**
 * A pending order is open until expires_at; a cancelled one ran out of time when it was cancelled
 * at or after expires_at (the expiry pass), else it was closed (orderClose, the channel). A
 * cancelled order was never paid: a late payment moves it to paid.
 */
export function payerOutcome(order: { status: string; expiresAt: Date; updatedAt: Date }, now = new Date()): PayerOutcome {
  if (order.status === 'pending') return order.expiresAt.getTime() > now.getTime() ? 'open' : 'expired';
  if (order.status === 'cancelled') return order.updatedAt.getTime() >= order.expiresAt.getTime() ? 'expired' : 'closed';
  return 'paid';
}

/** Pay by HH:mm Beijing time, with the minutes left. */
export function timeLeft(t: PayText, expiresAt: Date, now = new Date()): string {
  const minutes = Math.floor((expiresAt.getTime() - now.getTime()) / 60_000);
  const time = formatShanghai(expiresAt).slice(11, 16);
  return minutes >= 1 ? t('pay.timeLeft', { time, minutes: String(minutes) }) : t('pay.lastMinute', { time });
}

/** The way back to the shop as a button (`done`, `plain`) or a quiet link under the sheet; nothing without a return_url. */
export function toShop(t: PayText, s: PaySummary, label: 'pay.back' | 'pay.giveUp', style: 'done' | 'plain' | 'link'): string {
  if (!s.returnUrl) return '';
  const href = escapeHtml(s.returnUrl);
  const text = t(label, { merchant: s.merchantName });
  return style === 'link' ? `<p class="back"><a href="${href}">${text}</a></p>` : `<p><a class="button ${style}" href="${href}">${text}</a></p>`;
}

/** The action of an order that is no longer open: paid, or closed / out of time, with the way back to the shop. */
export function outcomeAction(t: PayText, s: PaySummary, outcome: Exclude<PayerOutcome, 'open'>): string {
  if (outcome === 'paid') {
    return `<p class="state ok">${t('pay.paidTitle')}</p>
<p>${t('pay.paidBody', { amount: s.amount, merchant: s.merchantName })}</p>
${toShop(t, s, 'pay.back', 'done') || `<p class="note">${t('pay.closeHint')}</p>`}`;
  }
  return `<p class="state">${t(outcome === 'expired' ? 'pay.expiredTitle' : 'pay.closedTitle')}</p>
<p class="explain">${t('pay.closedBody', { merchant: s.merchantName })}</p>
${toShop(t, s, 'pay.back', 'plain') || `<p class="note">${t('pay.closeHint')}</p>`}`;
}

/** The document's title: what the payer came to do, or what became of it. */
export function sheetTitle(t: PayText, s: PaySummary, outcome: PayerOutcome): string {
  if (outcome === 'open') return t('pay.title', { merchant: s.merchantName });
  const state = t(outcome === 'paid' ? 'pay.paidTitle' : outcome === 'expired' ? 'pay.expiredTitle' : 'pay.closedTitle');
  return `${state} · ${escapeHtml(s.merchantName)}`;
}

/**
 * The sheet: the order's facts and its action section (`id="screen-{screen}"`); while it is open,
 * the time left and, under the sheet, the way back to the shop for a payer who gives up.
 */
export function paySheet(t: PayText, s: PaySummary, open: boolean, screen: string, action: string, now = new Date()): string {
  const facts = [
    s.shopOrderNo ? `<dt>${t('field.shopOrder')}</dt><dd>${escapeHtml(s.shopOrderNo)}</dd>` : '',
    open ? `<dt>${t('field.payBy')}</dt><dd>${timeLeft(t, s.expiresAt, now)}</dd>` : '',
  ].filter(Boolean);
  return `<div class="sheet">
<h1 class="merchant">${escapeHtml(s.merchantName)}</h1>
<p class="amount">¥${escapeHtml(s.amount)}</p>
<p class="subject">${escapeHtml(s.subject)}</p>
${facts.length > 0 ? `<dl>\n${facts.join('\n')}\n</dl>\n` : ''}<section class="action" id="screen-${screen}">
${action}
</section>
</div>
${open ? toShop(t, s, 'pay.giveUp', 'link') : ''}`;
}
