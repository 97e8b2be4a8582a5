/** The sandbox checkout's HTML: small, escaped, no scripts, usable without CSS. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#222}
.amount{font-size:2.2rem;font-weight:600;margin:.5rem 0}
dl{display:grid;grid-template-columns:auto 1fr;gap:.3rem 1rem}dt{color:#666}
form{display:inline-block;margin:1rem .5rem 0 0}
button{font-size:1rem;padding:.6rem 1.4rem;border-radius:.4rem;border:1px solid #888;cursor:pointer}
.pay{background:#1a7f37;color:#fff;border-color:#1a7f37}
.note{color:#666;font-size:.85rem;margin-top:2rem}
</style>
</head>
<body>
<p><strong>Sandbox checkout</strong> (test mode: no real money moves)</p>
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

export function checkoutPage(v: CheckoutView): string {
  const orderNo = escapeHtml(v.orderNo);
  const token = escapeHtml(v.token);
  const actions =
    v.status === 'pending'
      ? `<form method="post" action="/sandbox/checkout/${orderNo}/pay">
<input type="hidden" name="token" value="${token}">
<button type="submit" class="pay">Pay ¥${escapeHtml(v.amount)}</button>
</form>
<form method="post" action="/sandbox/checkout/${orderNo}/fail">
<input type="hidden" name="token" value="${token}">
<button type="submit">Fail payment</button>
</form>`
      : `<p>This order is <strong>${escapeHtml(v.status)}</strong>; there is nothing left to pay.</p>`;
  return layout(
    `Pay ¥${v.amount} to ${v.merchantName}`,
    `<h1>Pay ${escapeHtml(v.merchantName)}</h1>
<p class="amount">¥${escapeHtml(v.amount)}</p>
<dl>
<dt>Merchant</dt><dd>${escapeHtml(v.merchantName)}</dd>
<dt>Order</dt><dd>${orderNo}</dd>
<dt>Method</dt><dd>${escapeHtml(v.payMethod ?? '-')}</dd>
<dt>Status</dt><dd>${escapeHtml(v.status)}</dd>
</dl>
${actions}
<p class="note">Pay and Fail make the sandbox send this service a signed channel notification, as a real processor would.</p>`,
  );
}

export function resultPage(title: string, message: string, backUrl?: string): string {
  const back = backUrl ? `<p><a href="${escapeHtml(backUrl)}">Back to the order</a></p>` : '';
  return layout(title, `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>\n${back}`);
}
