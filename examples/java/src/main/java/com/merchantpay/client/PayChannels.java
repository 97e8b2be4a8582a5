package com.merchantpay.client;

import java.util.List;

/** getPayChannels' answer: your linked, enabled channels, ordered by id. */
public record PayChannels(List<PayChannel> list, long total) {
    static PayChannels from(Fields f) {
        return new PayChannels(f.list("list", PayChannel::from), f.whole("total"));
    }
}
