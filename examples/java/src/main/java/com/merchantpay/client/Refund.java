package com.merchantpay.client;

import java.math.BigDecimal;

/** A refund (refundCreate, refundQuery, refundQueryList); status processing, succeeded or failed. */
public record Refund(String refundNo, String merchantRefundNo, String orderNo, BigDecimal refundAmount, String status, String reason, long createtime, long updatetime) {
    static Refund from(Fields f) {
        return new Refund(f.str("refund_no"), f.str("merchant_refund_no"), f.str("order_no"), f.decimal("refund_amount"), f.str("status"), f.str("reason"),
            f.whole("createtime"), f.whole("updatetime"));
    }
}
