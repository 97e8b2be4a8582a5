package com.merchantpay.client;

/** callbackTest's answer: the one attempt it made to your endpoint. */
public record CallbackTestAttempt(String url, Integer httpStatus, long durationMs, boolean success, String error, String responseExcerpt) {
    static CallbackTestAttempt from(Fields f) {
        return new CallbackTestAttempt(f.str("url"), f.intOrNull("http_status"), f.whole("duration_ms"), f.bool("success"), f.str("error"), f.str("response_excerpt"));
    }
}
