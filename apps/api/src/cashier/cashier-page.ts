import qrcode from 'qrcode-generator';
import type { CashierAdapterName, CashierStep, PayMode } from '@app/channels';
import { type Lang, type PayPageLayout, escapeHtml, payPageLayout, payText } from '../pay-pages/pay-page';
import { type PaySummary, outcomeAction, paySheet, sheetTitle } from '../pay-pages/pay-sheet';
import type { PayerDevice } from './payer-device';

/** What every cashier screen shows of the order (SPEC 6): merchant, subject, amount, the shop's order number, time left. */
export interface CashierSummary extends PaySummary {
  provider: CashierAdapterName;
  /** This page with its token, as a path (the language switch, "pay now", "try again"). */
  pageUrl: string;
  /** This page as an absolute URL: the QR code that takes it to a phone. */
  absolutePageUrl: string;
}

/** The screens of the cashier: one per thing the payer can do or needs to know. */
export type CashierScreen =
  | { kind: 'pay'; mode: PayMode; step: CashierStep; waitUrl: string }
  | { kind: 'wait' }
  | { kind: 'paid' }
  | { kind: 'closed'; expired: boolean }
  | { kind: 'notHere'; device: PayerDevice; instead: PayerDevice[] }
  | { kind: 'started'; mode: PayMode }
  | { kind: 'otherPayer' }
  | { kind: 'snapshot' }
  | { kind: 'unavailable' };

function qrSvg(data: string): string {
  const qr = qrcode(0, 'M');
  qr.addData(data);
  qr.make();
  return qr.createSvgTag({ cellSize: 4, margin: 2, scalable: true });
}

/** JSON for an inline script: `<` written \u003c, so no value can close the script element. */
const scriptJson = (value: unknown): string => JSON.stringify(value).replace(/</g, '\\u003c');

/**
 * JSAPI's one script (https://pay.weixin.qq.com/docs/merchant/apis/jsapi-payment/jsapi-transfer-payment.html):
 * WeixinJSBridge.invoke('getBrandWCPayRequest', ...) once the bridge is ready, and again from the
 * button; on `get_brand_wcpay_request:ok` the page moves to its waiting screen, which the
 * notification (never this answer) turns into "paid".
 */
function jsapiScript(request: Record<string, string>, waitUrl: string): string {
  return `(function(){var request=${scriptJson(request)};var waitUrl=${scriptJson(waitUrl)};
function pay(){WeixinJSBridge.invoke('getBrandWCPayRequest',request,function(res){if(res&&res.err_msg==='get_brand_wcpay_request:ok')location.replace(waitUrl);});}
document.getElementById('pay').addEventListener('click',function(){if(typeof WeixinJSBridge!=='undefined')pay();});
if(typeof WeixinJSBridge==='undefined')document.addEventListener('WeixinJSBridgeReady',pay,false);else pay();})();`;
}

/** How often a screen reloads to follow the order: fast where the payer pays elsewhere (a QR code, the wait), slowly otherwise. */
function refreshSeconds(screen: CashierScreen): number | undefined {
  switch (screen.kind) {
    case 'pay':
      return screen.step.kind === 'qr' ? 3 : screen.step.kind === 'link' ? 15 : undefined;
    case 'wait':
      return 3;
    case 'notHere':
    case 'started':
    case 'otherPayer':
    case 'snapshot':
      return 15;
    default:
      return undefined;
  }
}

export function cashierPage(s: CashierSummary, screen: CashierScreen, lang: Lang, nonces: PayPageLayout['nonces'], now = new Date()): string {
  const t = payText(lang);
  const provider = t(`provider.${s.provider}`);
  const outcome = screen.kind === 'paid' ? 'paid' : screen.kind === 'closed' ? (screen.expired ? 'expired' : 'closed') : 'open';

  let action: string;
  let script: string | undefined;
  switch (screen.kind) {
    case 'pay': {
      const { step } = screen;
      if (step.kind === 'qr') {
        action = `<p class="hint">${t('cashier.hint.native')}</p>
<div class="qr" role="img" aria-label="${t('cashier.qrLabel')}">${qrSvg(step.codeUrl)}</div>
<p class="note">${t('cashier.following')}</p>`;
      } else if (step.kind === 'link') {
        // WeChat's H5 page checks the Referer against the registered H5 domain: this link sends our origin, and nothing more.
        const referrer = step.sendsReferrer ? ' referrerpolicy="strict-origin"' : '';
        action = `<p class="hint">${t(screen.mode === 'h5' ? 'cashier.hint.h5' : screen.mode === 'wap' ? 'cashier.hint.wap' : 'cashier.hint.page')}</p>
<p><a class="button ${s.provider}" id="pay" href="${escapeHtml(step.url)}"${referrer}>${t(`cashier.pay.${s.provider}`)}</a></p>
<p class="note">${t('cashier.following')}</p>`;
      } else {
        action = `<p class="hint">${t('cashier.hint.jsapi')}</p>
<p><button type="button" class="button wechatpay" id="pay">${t('cashier.pay.wechatpay')}</button></p>`;
        script = jsapiScript(step.request, screen.waitUrl);
      }
      break;
    }
    case 'wait':
      action = `<p class="state">${t('cashier.waitTitle')}</p>
<p>${t('cashier.waitBody')}</p>
<p class="note">${t('cashier.waitUnpaid')} <a href="${escapeHtml(s.pageUrl)}">${t('cashier.payNow')}</a></p>`;
      break;
    case 'paid':
    case 'closed':
      action = outcomeAction(t, s, outcome as 'paid' | 'closed' | 'expired');
      break;
    case 'notHere': {
      // WeChat does not open Alipay's pages, nor the Alipay app WeChat Pay's, whatever the channel allows.
      const blocked = (screen.device === 'wechat' && s.provider === 'alipay') || (screen.device === 'alipay' && s.provider === 'wechatpay');
      const ways =
        screen.device === 'wechat' && s.provider === 'alipay'
          ? `<p class="explain">${t('cashier.openInBrowser')}</p>`
          : screen.instead.length > 0
            ? `<p class="explain">${t('cashier.instead')}</p>\n<ul class="instead">${screen.instead.map((d) => `<li>${t(`cashier.instead.${d as 'desktop' | 'phone' | 'wechat'}`)}</li>`).join('')}</ul>`
            : '';
      const pageQr =
        screen.device === 'desktop' && screen.instead.some((d) => d === 'phone' || d === 'wechat')
          ? `\n<p class="note">${t('cashier.scanPage')}</p>\n<div class="qr" role="img" aria-label="${t('cashier.pageQrLabel')}">${qrSvg(s.absolutePageUrl)}</div>`
          : '';
      action = `<p class="state">${t('cashier.notHereTitle')}</p>
<p class="explain">${t(blocked ? 'cashier.blocked' : 'cashier.notHere', { provider, device: t(`cashier.device.${screen.device}`) })}</p>
${ways}${pageQr}`;
      break;
    }
    case 'started':
      action = `<p class="state">${t('cashier.startedTitle')}</p>
<p class="explain">${t(`cashier.started.${screen.mode as 'native' | 'h5' | 'jsapi'}`, { provider, merchant: s.merchantName })}</p>`;
      break;
    case 'otherPayer':
      action = `<p class="state">${t('cashier.otherPayerTitle')}</p>\n<p class="explain">${t('cashier.otherPayer', { merchant: s.merchantName })}</p>`;
      break;
    case 'snapshot':
      action = `<p class="state">${t('cashier.snapshotTitle')}</p>\n<p class="explain">${t('cashier.snapshot')}</p>`;
      break;
    case 'unavailable':
      action = `<p class="state">${t('cashier.unavailableTitle')}</p>
<p>${t('cashier.unavailable', { provider })}</p>
<p><a class="button plain" href="${escapeHtml(s.pageUrl)}">${t('cashier.tryAgain')}</a></p>`;
      break;
  }

  return payPageLayout({
    lang,
    titleHtml: sheetTitle(t, s, outcome),
    body: paySheet(t, s, outcome === 'open', screen.kind, action, now),
    pageUrl: s.pageUrl,
    refreshSeconds: refreshSeconds(screen),
    nonces,
    script,
  });
}
