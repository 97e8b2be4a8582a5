package com.merchantpay.client;

import java.util.List;

/** callbackQueryList's answer: the order's deliveries, newest first. */
public record Deliveries(List<CallbackDelivery> list, long total) {
    static Deliveries from(Fields f) {
        return new Deliveries(f.list("list", CallbackDelivery::from), f.whole("total"));
    }
}
