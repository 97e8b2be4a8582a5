package com.merchantpay.client;

import java.math.BigDecimal;

/**
 * createOrder's answer (the first order again for a repeated merchant_order_no). Yuan are
 * BigDecimal, fen are long; expiresAt is null from a service that does not send it yet.
 */
public record CreatedOrder(
    String orderNo,
    String merchantOrderNo,
    String status,
    int orderType,
    BigDecimal cnyAmount,
    String paymentMethod,
    BigDecimal merchantAmount,
    long depositAmountFen,
    long serviceAmountFen,
    long merchantActualAmountFen,
    long createtime,
    String payUrl,
    Long expiresAt) {
    static CreatedOrder from(Fields f) {
        return new CreatedOrder(f.str("order_no"), f.str("merchant_order_no"), f.str("status"), (int) f.whole("order_type"), f.decimal("cny_amount"),
            f.str("payment_method"), f.decimal("merchant_amount"), f.whole("deposit_amount"), f.whole("service_amount"), f.whole("merchant_actual_amount"),
            f.whole("createtime"), f.str("pay_url"), f.wholeOrNull("expires_at"));
    }
}
