package com.merchantpay.client;

import java.util.List;

/** One callback delivery with every attempt (callbackQueryList); status pending, succeeded, failed or no_address. */
public record CallbackDelivery(String deliveryId, String eventId, String event, String url, String status, List<Attempt> attempts) {
    /** One attempt: httpStatus null when no answer came (error says why). */
    public record Attempt(long at, Integer httpStatus, long durationMs, String error, String responseExcerpt) {
        static Attempt from(Fields f) {
            return new Attempt(f.whole("at"), f.intOrNull("http_status"), f.whole("duration_ms"), f.str("error"), f.str("response_excerpt"));
        }
    }

    static CallbackDelivery from(Fields f) {
        return new CallbackDelivery(f.str("delivery_id"), f.str("event_id"), f.str("event"), f.str("url"), f.str("status"), f.list("attempts", Attempt::from));
    }
}
