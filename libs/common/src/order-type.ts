/** order_type 1: a top-up (the payer pays the merchant through a channel). */
export const BUY_ORDER = 1;
/** order_type 2: a payout (the channel pays the merchant's customer out of the merchant's balance). */
export const SELL_ORDER = 2;
