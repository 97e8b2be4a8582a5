import qrcode from 'qrcode-generator';

export type PageLanguage = 'zh-CN' | 'en';

const TEXTS = {
  'zh-CN': {
    title: (amount: string) => `微信支付 ¥${amount}`,
    scan: '请使用微信扫一扫，扫描二维码完成支付',
    merchant: '商户',
    order: '订单号',
    status: '状态',
    statuses: { pending: '待支付', paid: '已支付', confirmed: '已支付', completed: '支付完成', cancelled: '已关闭' } as Record<string, string>,
    done: '支付成功，可以关闭此页面。',
    closed: '订单已关闭，无需支付。',
    following: '页面会自动刷新支付状态。',
    notFound: '支付链接无效，请向商户索取新的链接。',
    other: 'English',
  },
  en: {
    title: (amount: string) => `WeChat Pay ¥${amount}`,
    scan: 'Scan the QR code with WeChat to pay',
    merchant: 'Merchant',
    order: 'Order',
    status: 'Status',
    statuses: { pending: 'Waiting for payment', paid: 'Paid', confirmed: 'Paid', completed: 'Payment complete', cancelled: 'Closed' } as Record<string, string>,
    done: 'Payment received. You can close this page.',
    closed: 'This order is closed; there is nothing to pay.',
    following: 'This page refreshes itself to follow the payment.',
    notFound: 'This payment link is not valid. Ask the merchant for a new one.',
    other: '中文',
  },
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

/** Chinese unless the page is asked for in English (`?lang=en`) or the browser prefers another language. */
export function pageLanguage(lang: unknown, acceptLanguage: string | undefined): PageLanguage {
  if (lang === 'en' || lang === 'zh-CN') return lang;
  if (!acceptLanguage) return 'zh-CN';
  return /^\s*zh/i.test(acceptLanguage) ? 'zh-CN' : 'en';
}

function layout(language: PageLanguage, title: string, body: string, refresh: boolean): string {
  return `<!doctype html>
<html lang="${language}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${refresh ? '<meta http-equiv="refresh" content="3">\n' : ''}<title>${escapeHtml(title)}</title>
<style>
body{font-family:system-ui,"PingFang SC","Microsoft YaHei",sans-serif;max-width:26rem;margin:2rem auto;padding:0 1rem;color:#222;text-align:center}
.brand{color:#07c160;font-weight:600}
.amount{font-size:2.2rem;font-weight:600;margin:.5rem 0}
.qr{display:inline-block;padding:.75rem;border:1px solid #ddd;border-radius:.5rem;background:#fff}
.qr svg{width:min(16rem,70vw);height:auto;display:block}
dl{display:grid;grid-template-columns:auto 1fr;gap:.3rem 1rem;text-align:left;margin:1.5rem 0;word-break:break-all}dt{color:#666}
.state{font-size:1.2rem;font-weight:600;margin:1rem 0}
.note{color:#666;font-size:.85rem}
</style>
</head>
<body>
${body}
</body>
</html>
`;
}

export interface WechatPageView {
  language: PageLanguage;
  orderNo: string;
  merchantName: string;
  amount: string;
  status: string;
  codeUrl: string;
  /** This page in the other language. */
  otherLanguageUrl: string;
}

/** The QR code of code_url while the order waits for payment; its state once it does not. Refreshes itself while pending. */
export function wechatPayPage(v: WechatPageView): string {
  const t = TEXTS[v.language];
  const pending = v.status === 'pending';
  let middle: string;
  if (pending) {
    const qr = qrcode(0, 'M');
    qr.addData(v.codeUrl);
    qr.make();
    middle = `<div class="qr" role="img" aria-label="QR code">${qr.createSvgTag({ cellSize: 4, margin: 2, scalable: true })}</div>\n<p>${escapeHtml(t.scan)}</p>`;
  } else {
    middle = `<p class="state">${escapeHtml(v.status === 'cancelled' ? t.closed : t.done)}</p>`;
  }
  return layout(
    v.language,
    t.title(v.amount),
    `<p class="brand">${escapeHtml(v.language === 'en' ? 'WeChat Pay' : '微信支付')}</p>
<p class="amount">¥${escapeHtml(v.amount)}</p>
${middle}
<dl>
<dt>${escapeHtml(t.merchant)}</dt><dd>${escapeHtml(v.merchantName)}</dd>
<dt>${escapeHtml(t.order)}</dt><dd>${escapeHtml(v.orderNo)}</dd>
<dt>${escapeHtml(t.status)}</dt><dd id="status">${escapeHtml(t.statuses[v.status] ?? v.status)}</dd>
</dl>
${pending ? `<p class="note">${escapeHtml(t.following)}</p>\n` : ''}<p><a href="${escapeHtml(v.otherLanguageUrl)}">${escapeHtml(t.other)}</a></p>`,
    pending,
  );
}

export function wechatNotFoundPage(language: PageLanguage): string {
  return layout(language, language === 'en' ? 'Not found' : '未找到', `<p class="state">${escapeHtml(TEXTS[language].notFound)}</p>`, false);
}
