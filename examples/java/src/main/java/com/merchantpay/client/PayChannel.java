package com.merchantpay.client;

import java.util.Arrays;
import java.util.List;

/** A payment channel linked to you (getPayChannels). */
public record PayChannel(long id, String category, String name, String payMethod, String categoryText, String payMethodText, long createtime, long updatetime) {
    static PayChannel from(Fields f) {
        return new PayChannel(f.whole("id"), f.str("category"), f.str("name"), f.str("pay_method"), f.str("category_text"), f.str("pay_method_text"),
            f.whole("createtime"), f.whole("updatetime"));
    }

    /** payMethod split: "alipay,wxpay" gives [alipay, wxpay]. */
    public List<String> payMethods() {
        return Arrays.stream(payMethod.split(",")).filter(m -> !m.isEmpty()).toList();
    }
}
