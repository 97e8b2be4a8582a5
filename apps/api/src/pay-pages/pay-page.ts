import { type Lang, isLang, negotiateLang } from '../portal/i18n/i18n';
import { type PayPageKey, en } from './i18n/en';
import { zhCN } from './i18n/zh-CN';

/**
 * What the pay pages share (the sandbox checkout, the cashier): their language, texts, words for
 * stored codes, layout and styles. Pages for payers, small and server-rendered, usable without
 * CSS; no script but the cashier's JSAPI call, under a CSP nonce.
 */

export type { Lang } from '../portal/i18n/i18n';

const TEXTS: Record<Lang, Record<PayPageKey, string>> = { en, 'zh-CN': zhCN };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

/** The page's language: `?lang=` as the portal's switch sets it, else the browser's Accept-Language. */
export function payPageLang(asked: unknown, acceptLanguage: string | undefined): Lang {
  return isLang(asked) ? asked : negotiateLang(acceptLanguage);
}

export type PayText = (key: PayPageKey, params?: Record<string, string>) => string;

/** The texts of `lang`, {params} escaped (the texts themselves are ours and may hold markup). */
export function payText(lang: Lang): PayText {
  return (key, params = {}) => TEXTS[lang][key].replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? escapeHtml(params[name]) : whole));
}

/** The payer's word for a stored pay method (`alipay`: Alipay, 支付宝), or null for none or one we have no word for. */
export function payMethodWord(lang: Lang, code: string | null): string | null {
  const key = `method.${code}`;
  return code !== null && key in en ? TEXTS[lang][key as PayPageKey] : null;
}

/** `url` with lang set: the switch's links and the forms carry the language through. */
export function withLang(url: string, lang: Lang): string {
  const [path, query = ''] = url.split('?');
  const params = new URLSearchParams(query);
  params.set('lang', lang);
  return `${path}?${params.toString()}`;
}

const STYLE = `*{box-sizing:border-box}
body{margin:0;font-family:system-ui,-apple-system,"Noto Sans CJK SC","PingFang SC","Microsoft YaHei",sans-serif;background:#f3f4f6;color:#1f2328;line-height:1.5}
main{max-width:28rem;margin:0 auto;padding:.75rem 1rem 2rem}
.langs{display:flex;gap:1rem;justify-content:flex-end;font-size:.875rem;margin:0 0 .75rem}
.langs a{color:#0969da}
.langs a[aria-current]{font-weight:600;color:#1f2328;text-decoration:none}
.banner{background:#fff8c5;border:1px solid #d4a72c;border-radius:.5rem;padding:.5rem .75rem;font-size:.9rem}
.sheet{background:#fff;border-radius:.75rem;padding:1.25rem;box-shadow:0 1px 3px rgba(31,35,40,.12)}
h1{font-size:1.15rem;margin:0 0 .25rem}
.merchant{margin:0;color:#57606a}
.amount{font-size:2.25rem;font-weight:650;margin:.1rem 0 .25rem;letter-spacing:-.01em}
.subject{margin:0 0 1rem;font-size:1.05rem;overflow-wrap:anywhere}
dl{display:grid;grid-template-columns:auto 1fr;gap:.3rem 1rem;margin:0;font-size:.9rem}
dt{color:#57606a}
dd{margin:0;overflow-wrap:anywhere}
.action{margin-top:1.25rem;text-align:center}
.action p{margin:.5rem 0}
.action p.explain{text-align:left}
.button{display:block;width:100%;padding:.8rem 1rem;border-radius:.5rem;border:1px solid transparent;font:inherit;font-size:1.05rem;font-weight:600;text-decoration:none;color:#fff;background:#1677ff;cursor:pointer;text-align:center}
.button.wechatpay{background:#07a35a}
.button.plain{background:#fff;color:#1f2328;border-color:#d0d7de}
.button.done{background:#1a7f37}
.hint,.note{color:#57606a;font-size:.9rem}
.qr{display:inline-block;padding:.5rem;border:1px solid #d0d7de;border-radius:.5rem;background:#fff}
.qr svg{width:min(13rem,60vw);height:auto;display:block}
.state{font-size:1.25rem;font-weight:650;margin:.25rem 0 .5rem}
.state.ok{color:#1a7f37}
.state.bad{color:#cf222e}
.instead{text-align:left;margin:.5rem 0;padding-left:1.25rem}
.back{margin-top:1rem;text-align:center;font-size:.95rem}
.back a{color:#57606a}
.action form{margin:.5rem 0}
`;

export interface PayPageLayout {
  lang: Lang;
  /** The document's title, as HTML (our texts, params escaped). */
  titleHtml: string;
  body: string;
  /** This page's own address, for the language switch; null when it has none (a POST's answer). */
  pageUrl: string | null;
  /** Reload every so many seconds: how a page without script follows an order's status. */
  refreshSeconds?: number;
  /** The CSP nonces of this answer, when the route has them (the cashier). */
  nonces?: { style: string; script: string } | null;
  /** A script of ours, run under the script nonce (the cashier's JSAPI call only). */
  script?: string;
}

export function payPageLayout(p: PayPageLayout): string {
  const t = payText(p.lang);
  const switcher = p.pageUrl
    ? `<nav class="langs" aria-label="${t('lang.label')}">
<a href="${escapeHtml(withLang(p.pageUrl, 'en'))}" lang="en" hreflang="en"${p.lang === 'en' ? ' aria-current="true"' : ''}>English</a>
<a href="${escapeHtml(withLang(p.pageUrl, 'zh-CN'))}" lang="zh-CN" hreflang="zh-CN"${p.lang === 'zh-CN' ? ' aria-current="true"' : ''}>简体中文</a>
</nav>`
    : '';
  const styleNonce = p.nonces ? ` nonce="${p.nonces.style}"` : '';
  const script = p.script && p.nonces ? `\n<script nonce="${p.nonces.script}">${p.script}</script>` : '';
  return `<!doctype html>
<html lang="${p.lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${p.refreshSeconds ? `<meta http-equiv="refresh" content="${p.refreshSeconds}">\n` : ''}<title>${p.titleHtml}</title>
<style${styleNonce}>
${STYLE}</style>
</head>
<body>
<main>
${switcher}
${p.body}
</main>${script}
</body>
</html>
`;
}

/** The page for a link that is not valid: the same for an unknown order and a wrong token. */
export function notFoundPayPage(lang: Lang, nonces: PayPageLayout['nonces'] = null): string {
  const t = payText(lang);
  return payPageLayout({
    lang,
    titleHtml: t('notFound.title'),
    body: `<div class="sheet"><h1>${t('notFound.title')}</h1>\n<p>${t('notFound.body')}</p></div>`,
    pageUrl: null,
    nonces,
  });
}
