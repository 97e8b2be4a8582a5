import type { ChannelCategory, PayMethod } from '@app/db';

/** Display texts of SPEC 6. */
export const CATEGORY_TEXT: Record<ChannelCategory, string> = {
  processor: 'Payment processor',
  remotepay: 'Third-party payment',
  warehouse: 'Cloud-warehouse payment',
};

export const PAY_METHOD_TEXT: Record<PayMethod, string> = {
  wxpay: 'WeChat Pay',
  alipay: 'Alipay',
  bank: 'Bank card',
};

export function payMethodText(payMethod: string): string {
  return payMethod
    .split(',')
    .map((m) => PAY_METHOD_TEXT[m as PayMethod] ?? m)
    .join(', ');
}
