package com.merchantpay.client;

/** callbackResend's answer: the delivery queued (or the one still pending) of the order's latest event. */
public record ResendAnswer(String eventId, String event, String deliveryId) {
    static ResendAnswer from(Fields f) {
        return new ResendAnswer(f.str("event_id"), f.str("event"), f.str("delivery_id"));
    }
}
