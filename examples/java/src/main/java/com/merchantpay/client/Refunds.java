package com.merchantpay.client;

import java.util.List;

/** refundQueryList's answer: the order's refunds, newest first. */
public record Refunds(List<Refund> list, long total) {
    static Refunds from(Fields f) {
        return new Refunds(f.list("list", Refund::from), f.whole("total"));
    }
}
