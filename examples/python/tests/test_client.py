"""Offline tests of the package (python -m unittest discover -s tests): no service needed."""
import base64
import decimal
import hashlib
import hmac
import json
import time
import unittest

from merchant_pay_client import (
    CallbackVerifier,
    CreatedOrder,
    MerchantClient,
    OrderCallback,
    RefundCallback,
    Statement,
    TestCallback,
    UnknownCallback,
    from_data,
    sign,
    yuan_text,
)

KEY = "mk_test_0001"
OLD = "sk_test_previous_secret_0000000000000000"
NEW = "sk_test_current_secret_11111111111111111"


def callback(body_secret, header_secrets, **fields):
    """A callback as the service sends it: the body signed like a request, one header entry per secret."""
    body = dict({"event_id": "0b7d7a4e-2c1e-4f7a-9d55-1f1b2c3d4e5f", "event": "order.paid", "order_no": "2025112112000012345678",
                 "merchant_order_no": "A-1001", "order_type": 1, "status": "paid", "cny_amount": "100.00",
                 "merchant_actual_amount": 9940, "service_rate": "0.00600000", "service_amount": 60,
                 "createtime": 1763700000, "updatetime": 1763700060, "paid_at": 1763700060}, **fields)
    body.update(api_key=KEY, timestamp=int(time.time()), nonce="n0nce-abcdefgh")
    body["signature"] = sign(body, body_secret)
    raw = json.dumps(body, separators=(",", ":")).encode()
    ts = str(body["timestamp"])
    entries = ["v1," + base64.b64encode(hmac.new(s.encode(), body["event_id"].encode() + b"." + ts.encode() + b"." + raw, hashlib.sha256).digest()).decode() for s in header_secrets]
    return {"webhook-id": body["event_id"], "webhook-timestamp": ts, "webhook-signature": " ".join(entries)}, raw


class RotationTest(unittest.TestCase):
    def test_during_the_grace_a_receiver_with_only_the_old_secret_accepts(self):
        headers, raw = callback(OLD, [NEW, OLD])
        got = CallbackVerifier(KEY, [OLD]).verify(headers, raw)
        self.assertIsInstance(got, OrderCallback)
        self.assertEqual((got.event, got.cny_amount, got.merchant_actual_amount), ("order.paid", decimal.Decimal("100.00"), 9940))

    def test_a_receiver_holding_both_accepts_a_body_signed_with_either(self):
        for body_secret in (OLD, NEW):
            headers, raw = callback(body_secret, [NEW, OLD])
            self.assertIsNotNone(MerchantClient("https://pay.example/api", KEY, NEW, OLD).verify_callback(headers, raw), body_secret)

    def test_a_body_signed_with_a_secret_the_receiver_lacks_is_refused(self):
        headers, raw = callback(OLD, [NEW, OLD])
        only_new = CallbackVerifier(KEY, [NEW])
        self.assertEqual((only_new.headers_verify(headers, raw), only_new.body_verifies(json.loads(raw))), (True, False))
        self.assertIsNone(only_new.verify(headers, raw))
        self.assertIsNone(CallbackVerifier(KEY, ["sk_someone_else"]).verify(headers, raw))

    def test_a_changed_body_or_a_stale_timestamp_is_refused(self):
        headers, raw = callback(NEW, [NEW])
        verifier = CallbackVerifier(KEY, [NEW])
        self.assertIsNotNone(verifier.verify(headers, raw))
        self.assertIsNone(verifier.verify(headers, raw.replace(b"9940", b"9999")))
        self.assertFalse(verifier.headers_verify(headers, raw, now=time.time() + 3600))


class TypedTest(unittest.TestCase):
    def test_callbacks_are_typed_by_event(self):
        refund = {"event_id": "e", "event": "refund.succeeded", "refund_no": "2025112312000087654321", "merchant_refund_no": "R-1",
                  "order_no": "2025112112000012345678", "merchant_order_no": None, "refund_amount": "30.00", "status": "succeeded",
                  "reason": None, "createtime": 1, "updatetime": 2}
        for event, body, kind in [("refund.succeeded", refund, RefundCallback), ("webhook.test", {}, TestCallback), ("payout.new", {"x": 1}, UnknownCallback)]:
            headers, raw = callback(NEW, [NEW], **dict(body, event=event))
            self.assertIsInstance(CallbackVerifier(KEY, [NEW]).verify(headers, raw), kind)
        headers, raw = callback(NEW, [NEW], **refund)
        self.assertEqual(CallbackVerifier(KEY, [NEW]).verify(headers, raw).refund_amount, decimal.Decimal("30.00"))

    def test_yuan_are_decimal_fen_are_int_and_new_fields_land_in_extra(self):
        order = from_data(CreatedOrder, {"order_no": "2025112112000012345678", "cny_amount": "100.00", "merchant_amount": "99.40",
                                         "service_amount": 60, "deposit_amount": 0, "merchant_actual_amount": 9940, "brand_new": True})
        self.assertEqual((order.cny_amount, order.merchant_amount, order.service_amount), (decimal.Decimal("100.00"), decimal.Decimal("99.40"), 60))
        self.assertEqual(order.extra, {"brand_new": True})
        day = from_data(Statement, {"date": "2025-11-21", "opening_balance": {"available_fen": 1, "deposit_fen": 2},
                                    "movements": [{"entry_id": "1", "amount_fen": -3000}], "total": 1})
        self.assertEqual((day.opening_balance.deposit_fen, day.movements[0].amount_fen), (2, -3000))

    def test_amounts_go_out_as_text_with_two_places_never_rounded(self):
        self.assertEqual([yuan_text("100"), yuan_text(decimal.Decimal("0.5")), yuan_text(7)], ["100.00", "0.50", "7.00"])
        for wrong in ["1.005", "0", "-1.00", "abc"]:
            with self.assertRaises(ValueError, msg=wrong):
                yuan_text(wrong)
        with self.assertRaises(TypeError):
            yuan_text(100.5)


class BaseUrlTest(unittest.TestCase):
    def test_a_missing_or_relative_base_url_is_a_clear_error(self):
        for url in ["", None, "   "]:
            with self.assertRaisesRegex(ValueError, "base URL is missing"):
                MerchantClient(url, KEY, NEW)
        with self.assertRaisesRegex(ValueError, "not an absolute http"):
            MerchantClient("pay.example.com/api", KEY, NEW)


if __name__ == "__main__":
    unittest.main()
