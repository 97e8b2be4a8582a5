package com.merchantpay.client;

import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A verified callback's event (SPEC 7), by its type: switch over the records. Dedupe by eventId:
 * the same event may arrive more than once.
 */
public sealed interface Callback permits Callback.OrderEvent, Callback.RefundEvent, Callback.TestEvent, Callback.UnknownEvent {
    String eventId();

    String event();

    /** order.paid, order.completed, order.cancelled (reason says why: expired, closed, ...). paidAt null until paid. */
    record OrderEvent(
        String eventId,
        String event,
        String orderNo,
        String merchantOrderNo,
        int orderType,
        String status,
        BigDecimal cnyAmount,
        long merchantActualAmountFen,
        BigDecimal serviceRate,
        long serviceAmountFen,
        long createtime,
        long updatetime,
        Long paidAt,
        String reason) implements Callback {}

    /** refund.succeeded, refund.failed. */
    record RefundEvent(
        String eventId,
        String event,
        String refundNo,
        String merchantRefundNo,
        String orderNo,
        String merchantOrderNo,
        BigDecimal refundAmount,
        String status,
        String reason,
        long createtime,
        long updatetime) implements Callback {}

    /** webhook.test (callbackTest, the portal's Send test event): answer success and do nothing else. */
    record TestEvent(String eventId, String event) implements Callback {}

    /** An event this version of the client does not know yet: every field of its body but the signing ones. */
    record UnknownEvent(String eventId, String event, Map<String, Object> fields) implements Callback {}

    /** The typed event of a callback body (verify it first: CallbackVerifier.verify does both). */
    static Callback from(Map<String, ?> body) {
        Fields f = Fields.of(body, "the callback");
        String event = f.str("event");
        if (event != null && event.startsWith("order.")) {
            return new OrderEvent(f.str("event_id"), event, f.str("order_no"), f.str("merchant_order_no"), (int) f.whole("order_type"), f.str("status"),
                f.decimal("cny_amount"), f.whole("merchant_actual_amount"), f.decimal("service_rate"), f.whole("service_amount"), f.whole("createtime"),
                f.whole("updatetime"), f.wholeOrNull("paid_at"), f.str("reason"));
        }
        if (event != null && event.startsWith("refund.")) {
            return new RefundEvent(f.str("event_id"), event, f.str("refund_no"), f.str("merchant_refund_no"), f.str("order_no"), f.str("merchant_order_no"),
                f.decimal("refund_amount"), f.str("status"), f.str("reason"), f.whole("createtime"), f.whole("updatetime"));
        }
        if ("webhook.test".equals(event)) return new TestEvent(f.str("event_id"), event);
        Map<String, Object> fields = new LinkedHashMap<>(body);
        fields.keySet().removeAll(List.of("api_key", "timestamp", "nonce", "signature"));
        return new UnknownEvent(f.str("event_id"), event, fields);
    }
}
