package com.merchantpay.client;

/** callbackRecover's answer: how many failed deliveries were queued again. */
public record RecoverAnswer(long queued) {
    static RecoverAnswer from(Fields f) {
        return new RecoverAnswer(f.whole("queued"));
    }
}
