package com.merchantpay.client;

import java.util.List;

/** orderQueryList's answer: one page of orders, newest first; total counts every page. */
public record OrderPage(List<Order> list, long total, int page, int limit) {
    static OrderPage from(Fields f) {
        return new OrderPage(f.list("list", Order::from), f.whole("total"), (int) f.whole("page"), (int) f.whole("limit"));
    }
}
