package com.merchantpay.client;

import java.math.BigDecimal;

/** An order as orderQueryDetail, orderQueryList and orderClose answer it. serviceRate: eight decimals ("0.00600000"). */
public record Order(
    String orderNo,
    String merchantOrderNo,
    int orderType,
    BigDecimal cnyAmount,
    long merchantActualAmountFen,
    BigDecimal serviceRate,
    long serviceAmountFen,
    String status,
    long createtime,
    long updatetime) {
    static Order from(Fields f) {
        return new Order(f.str("order_no"), f.str("merchant_order_no"), (int) f.whole("order_type"), f.decimal("cny_amount"), f.whole("merchant_actual_amount"),
            f.decimal("service_rate"), f.whole("service_amount"), f.str("status"), f.whole("createtime"), f.whole("updatetime"));
    }
}
