package com.merchantpay.client;

/** createSellOrder's answer: the order as createOrder answers it (orderType 2, payUrl null) and the payee, its account masked. */
public record SellOrder(CreatedOrder order, String payeeName, String payeeBank, String payeeAccount) {
    static SellOrder from(Fields f) {
        return new SellOrder(CreatedOrder.from(f), f.str("payee_name"), f.str("payee_bank"), f.str("payee_account"));
    }
}
