/**
 * The pay pages' English texts: what the payer reads on the sandbox checkout and on the cashier.
 * zh-CN.ts must have exactly these keys (a type error otherwise). A text may hold markup of ours;
 * its {params} are escaped when filled in.
 */
export const en = {
  'lang.label': 'Language',
  'notFound.title': 'Payment link not found',
  'notFound.body': 'This payment link is not valid. Ask the merchant for a new one.',

  'field.shopOrder': 'Order no.',
  'field.payBy': 'Pay by',

  'method.alipay': 'Alipay',
  'method.wxpay': 'WeChat Pay',
  'method.bank': 'Bank card',
  'provider.alipay': 'Alipay',
  'provider.wechatpay': 'WeChat Pay',

  'pay.title': 'Pay {merchant}',
  'pay.timeLeft': '{time} Beijing time, {minutes} min left',
  'pay.lastMinute': '{time} Beijing time, less than a minute left',
  'pay.giveUp': 'Cancel and go back to {merchant}',
  'pay.back': 'Back to {merchant}',
  'pay.closeHint': 'You can close this page.',
  'pay.paidTitle': 'Payment succeeded',
  'pay.paidBody': 'Thank you: ¥{amount} to {merchant} is paid.',
  'pay.closedTitle': 'This order is closed',
  'pay.closedBody': 'It was not paid, and it can no longer be paid. To buy, go back to {merchant} and order again.',
  'pay.expiredTitle': 'The time to pay has run out',

  'sandbox.banner': '<strong>Sandbox checkout</strong>: a test payment, no real money moves.',
  'sandbox.pay': 'Pay ¥{amount}',
  'sandbox.payWith': 'Pay ¥{amount} with {method}',
  'sandbox.fail': 'Simulate a failed payment',
  'sandbox.failedTitle': 'Payment failed',
  'sandbox.failedBody': 'Nothing was paid. You can try again.',
  'sandbox.refusedTitle': 'The payment could not be confirmed',
  'sandbox.refused': 'Nothing was paid (HTTP {http}). Try again.',

  'cashier.pay.alipay': 'Pay with Alipay',
  'cashier.pay.wechatpay': 'Pay with WeChat',
  'cashier.hint.page': 'Alipay opens its payment page: sign in there, or scan its code with the Alipay app.',
  'cashier.hint.wap': 'Alipay opens to confirm the payment, in its app or on its web page.',
  'cashier.hint.h5': 'WeChat opens to confirm the payment.',
  'cashier.hint.native': 'Open WeChat on your phone, tap <strong>+</strong> then <strong>Scan</strong>, and scan this code.',
  'cashier.hint.jsapi': 'Confirm the payment in the WeChat window. If it does not open, tap the button.',
  'cashier.qrLabel': 'QR code to scan with WeChat',
  'cashier.following': 'This page updates by itself once you have paid.',
  'cashier.waitTitle': 'Checking your payment',
  'cashier.waitBody': 'This takes a few seconds once you have paid, and this page updates by itself.',
  'cashier.waitUnpaid': 'Did not pay yet?',
  'cashier.payNow': 'Pay now',
  'cashier.device.desktop': 'on a computer',
  'cashier.device.phone': 'in a phone browser',
  'cashier.device.wechat': 'inside WeChat',
  'cashier.device.alipay': 'inside the Alipay app',
  'cashier.notHereTitle': 'This order cannot be paid here',
  'cashier.notHere': '{provider} cannot be used {device} for this order.',
  'cashier.blocked': '{provider} cannot be opened {device}.',
  'cashier.instead': 'What works instead:',
  'cashier.instead.desktop': 'Open this page on a computer.',
  'cashier.instead.phone': 'Open this page in your phone’s browser (Safari, Chrome…).',
  'cashier.instead.wechat': 'Open this page in WeChat: send the link to yourself in a chat and tap it.',
  'cashier.openInBrowser': 'Tap <strong>···</strong> at the top right and choose <strong>Open in Browser</strong>.',
  'cashier.scanPage': 'Or scan this code with your phone to open this page there.',
  'cashier.pageQrLabel': 'QR code of this page',
  'cashier.startedTitle': 'This payment was started another way',
  'cashier.started.native':
    'It was started as a QR code on a computer. {provider} keeps one way of paying per order: scan that code with WeChat, or go back to {merchant} and order again.',
  'cashier.started.h5':
    'It was started in a phone browser. {provider} keeps one way of paying per order: finish it in the phone browser where it began, or go back to {merchant} and order again.',
  'cashier.started.jsapi':
    'It was started inside WeChat. {provider} keeps one way of paying per order: finish it in WeChat, or go back to {merchant} and order again.',
  'cashier.otherPayerTitle': 'Another WeChat account is paying this order',
  'cashier.otherPayer': 'It can be paid only with the WeChat account that started it. Go back to {merchant} and order again to pay with yours.',
  'cashier.snapshotTitle': 'Use the full page to pay',
  'cashier.snapshot': 'WeChat is showing a preview of this page. Tap <strong>Use full service</strong> at the bottom to pay.',
  'cashier.unavailableTitle': 'Payment cannot start right now',
  'cashier.unavailable': '{provider} did not answer. Try again in a moment.',
  'cashier.tryAgain': 'Try again',
};

export type PayPageKey = keyof typeof en;
