"""The client: signed requests to every merchant operation, typed answers, callback verification."""
import base64
import decimal
import hashlib
import hmac
import json
import secrets as _secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterable, Mapping, Optional, Union

from .models import (
    Balance,
    Callback,
    CallbackTestAttempt,
    CreatedOrder,
    DeliveryList,
    Order,
    OrderPage,
    PayChannelList,
    RecoverAnswer,
    Refund,
    RefundList,
    ResendAnswer,
    SellOrder,
    Statement,
    callback_from,
    from_data,
    yuan_text,
)
from .signing import canonical_json, sign

__all__ = ["CALLBACK_TOLERANCE_SECONDS", "CallbackVerifier", "MerchantClient", "MerchantError"]

# A callback whose timestamp is further than this from now is refused (replays of old callbacks).
CALLBACK_TOLERANCE_SECONDS = 300

# Yuan as a Decimal or text ("100.00"), never a float.
Amount = Union[decimal.Decimal, str, int]


class MerchantError(Exception):
    """Any answer whose code is not 1 (SPEC 2), or no envelope at all (code 0: network, not JSON)."""

    def __init__(self, code: int, msg: str, data: Any = None, http_status: Optional[int] = None):
        super().__init__("MerchantError %s: %s" % (code, msg))
        self.code = code
        self.msg = msg
        self.data = data
        self.http_status = http_status


def _fresh(timestamp: Any, now: Optional[float]) -> bool:
    if isinstance(timestamp, bool):
        return False
    try:
        ts = int(timestamp)
    except (TypeError, ValueError):
        return False
    return abs((time.time() if now is None else now) - ts) <= CALLBACK_TOLERANCE_SECONDS


class CallbackVerifier:
    """Checks a received callback both ways with every secret you hold.

    During a secret rotation's grace (SPEC 3) `webhook-signature` carries an entry per secret and
    the body's `signature` is made with one of them (the previous secret until the grace ends):
    a callback passes when each check matches ANY of `secrets`. So a receiver that still holds only
    the old secret keeps accepting while you deploy the new one, and one holding both accepts either.
    """

    def __init__(self, api_key: str, secrets: Iterable[Optional[str]]):
        self.api_key = api_key
        self.secrets = [s for s in secrets if s]
        if not self.secrets:
            raise ValueError("CallbackVerifier needs at least one api_secret")

    def body_verifies(self, body: Mapping[str, Any], now: Optional[float] = None) -> bool:
        """The body's `signature` (signed like a request) with any secret, its api_key ours, its timestamp fresh."""
        signature = body.get("signature")
        if not isinstance(signature, str) or body.get("api_key") != self.api_key or not _fresh(body.get("timestamp"), now):
            return False
        given = signature.lower().encode("utf-8")
        return any(hmac.compare_digest(sign(body, s).encode("utf-8"), given) for s in self.secrets)

    def headers_verify(self, headers: Mapping[str, str], raw_body: Union[bytes, str], now: Optional[float] = None) -> bool:
        """Standard Webhooks: any `v1,<base64 HMAC-SHA256 of id.timestamp.body>` entry with any secret.
        raw_body: the exact bytes received; header names in any case."""
        h = {k.lower(): v for k, v in headers.items()}
        msg_id, timestamp, signatures = h.get("webhook-id"), h.get("webhook-timestamp"), h.get("webhook-signature")
        if not msg_id or not timestamp or not signatures or not _fresh(timestamp, now):
            return False
        raw = raw_body.encode("utf-8") if isinstance(raw_body, str) else raw_body
        signed = msg_id.encode("utf-8") + b"." + timestamp.encode("utf-8") + b"." + raw
        expected = [base64.b64encode(hmac.new(s.encode("utf-8"), signed, hashlib.sha256).digest()) for s in self.secrets]
        for entry in signatures.split(" "):
            version, _, value = entry.partition(",")
            if version == "v1" and any(hmac.compare_digest(value.encode("utf-8"), e) for e in expected):
                return True
        return False

    def verify(self, headers: Mapping[str, str], raw_body: Union[bytes, str]) -> Optional[Callback]:
        """Both checks; the typed event (OrderCallback, RefundCallback, TestCallback...), or None when either fails."""
        try:
            body = json.loads(raw_body)
        except ValueError:
            return None
        if not isinstance(body, dict) or not self.headers_verify(headers, raw_body) or not self.body_verifies(body):
            return None
        return callback_from(body)


class MerchantClient:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        api_secret: str,
        previous_secret: Optional[str] = None,
        timeout: float = 15,
    ):
        """base_url: SPEC's {base_url}, e.g. https://pay.example.com/api. previous_secret: the secret a
        rotation replaced, accepted on callbacks during its grace (requests are signed with api_secret)."""
        if not base_url or not str(base_url).strip():
            raise ValueError("MerchantClient: the base URL is missing: give your {base_url}, e.g. https://pay.example.com/api")
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError("MerchantClient: the base URL %r is not an absolute http(s) URL such as https://pay.example.com/api" % (base_url,))
        if not api_key or not api_secret:
            raise ValueError("MerchantClient: api_key and api_secret are both required")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.api_secret = api_secret
        self.verifier = CallbackVerifier(api_key, [api_secret, previous_secret])
        self.timeout = timeout

    # -- requests ---------------------------------------------------------------------------------

    def signed_params(self, params: Mapping[str, Any]) -> Dict[str, Any]:
        """The parameters with api_key, timestamp, nonce and signature added (None values left out)."""
        body = {k: v for k, v in params.items() if v is not None}
        body["api_key"] = self.api_key
        body["timestamp"] = int(time.time())
        body["nonce"] = _secrets.token_hex(12)
        body["signature"] = sign(body, self.api_secret)
        return body

    def request(self, operation: str, params: Optional[Mapping[str, Any]] = None, language: Optional[str] = None) -> Dict[str, Any]:
        """POST {base_url}/merchant/{operation}, signed; the envelope {code, msg, time, data} as it came (plus
        _http_status). language: "zh-CN" for Chinese `msg` (SPEC 2).
        Raises MerchantError(code 0) only when no envelope came back (network failure, not JSON): for a
        create, retry with the same merchant_order_no / merchant_refund_no, which is safe."""
        payload = canonical_json(self.signed_params(params or {})).encode("utf-8")
        headers = {"content-type": "application/json; charset=utf-8", "accept": "application/json"}
        if language:
            headers["accept-language"] = language
        req = urllib.request.Request("%s/merchant/%s" % (self.base_url, operation), data=payload, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                status, raw = res.status, res.read()
        except urllib.error.HTTPError as err:  # 4xx/5xx still carry the envelope
            status, raw = err.code, err.read()
        except (urllib.error.URLError, OSError) as err:
            raise MerchantError(0, "no answer from %s: %s" % (self.base_url, err)) from err
        try:
            envelope = json.loads(raw.decode("utf-8"))
        except ValueError:
            raise MerchantError(0, "HTTP %s answered something that is not JSON" % status, http_status=status) from None
        if not isinstance(envelope, dict) or "code" not in envelope:
            raise MerchantError(0, "HTTP %s answered JSON that is not an envelope" % status, http_status=status)
        envelope["_http_status"] = status
        return envelope

    @staticmethod
    def data_of(envelope: Mapping[str, Any]) -> Any:
        """The envelope's data when its code is 1, else MerchantError with its code, msg and data."""
        if envelope.get("code") != 1:
            raise MerchantError(envelope.get("code", 0), envelope.get("msg", ""), envelope.get("data"), envelope.get("_http_status"))
        return envelope.get("data")

    def call(self, operation: str, params: Optional[Mapping[str, Any]] = None) -> Any:
        """Any operation by name (one this version does not know yet too): its data as parsed JSON, or MerchantError."""
        return self.data_of(self.request(operation, params))

    # -- orders (SPEC 5) --------------------------------------------------------------------------

    def create_order(self, cny_amount: Amount, paychannel_id: int, paychannel_paymethod: str, **optional: Any) -> CreatedOrder:
        """A top-up order. cny_amount: yuan as Decimal or text ("100.00"), never a float. optional:
        merchant_order_no (makes a retry safe), notify_url, customer_name, subject, return_url."""
        params = dict(optional, order_type=1, cny_amount=yuan_text(cny_amount), paychannel_id=paychannel_id, paychannel_paymethod=paychannel_paymethod)
        return from_data(CreatedOrder, self.call("createOrder", params))

    def order_query_list(self, **filters: Any) -> OrderPage:
        """page, limit, status, order_type, start_time, end_time: newest first."""
        return from_data(OrderPage, self.call("orderQueryList", filters))

    def order_query_detail(self, order_no: Optional[str] = None, merchant_order_no: Optional[str] = None) -> Order:
        """By order_no or merchant_order_no (exactly one)."""
        return from_data(Order, self.call("orderQueryDetail", {"order_no": order_no, "merchant_order_no": merchant_order_no}))

    def get_pay_channels(self, category: Optional[str] = None) -> PayChannelList:
        """Your linked channels; category: processor, remotepay, warehouse, or None for all."""
        return from_data(PayChannelList, self.call("getPayChannels", {"category": category}))

    # -- money out (SPEC 6) -----------------------------------------------------------------------

    def order_close(self, order_no: str) -> Order:
        return from_data(Order, self.call("orderClose", {"order_no": order_no}))

    def refund_create(self, order_no: str, refund_amount: Amount, merchant_refund_no: str, reason: Optional[str] = None, notify_url: Optional[str] = None) -> Refund:
        """Refund a completed order, wholly or in part; the same merchant_refund_no makes a retry safe."""
        params = {"order_no": order_no, "refund_amount": yuan_text(refund_amount), "merchant_refund_no": merchant_refund_no, "reason": reason, "notify_url": notify_url}
        return from_data(Refund, self.call("refundCreate", params))

    def refund_query(self, refund_no: Optional[str] = None, merchant_refund_no: Optional[str] = None) -> Refund:
        return from_data(Refund, self.call("refundQuery", {"refund_no": refund_no, "merchant_refund_no": merchant_refund_no}))

    def refund_query_list(self, order_no: str) -> RefundList:
        return from_data(RefundList, self.call("refundQueryList", {"order_no": order_no}))

    def create_sell_order(self, cny_amount: Amount, paychannel_id: int, payee_name: str, payee_account: str, payee_bank: str, **optional: Any) -> SellOrder:
        """A payout to your customer from your balance; optional: merchant_order_no, notify_url."""
        params = dict(optional, cny_amount=yuan_text(cny_amount), paychannel_id=paychannel_id, payee_name=payee_name, payee_account=payee_account, payee_bank=payee_bank)
        return from_data(SellOrder, self.call("createSellOrder", params))

    def statement_query(self, date: str, page: Optional[int] = None, limit: Optional[int] = None) -> Statement:
        """The day's statement (date YYYY-MM-DD, Asia/Shanghai): opening, movements, closing, in fen."""
        return from_data(Statement, self.call("statementQuery", {"date": date, "page": page, "limit": limit}))

    def balance_query(self) -> Balance:
        """Your available and deposit balances now, in fen (SPEC 6 balanceQuery)."""
        return from_data(Balance, self.call("balanceQuery", {}))

    # -- callback tools (SPEC 7) ------------------------------------------------------------------

    def callback_resend(self, order_no: str) -> ResendAnswer:
        return from_data(ResendAnswer, self.call("callbackResend", {"order_no": order_no}))

    def callback_query_list(self, order_no: str) -> DeliveryList:
        return from_data(DeliveryList, self.call("callbackQueryList", {"order_no": order_no}))

    def callback_recover(self, start_time: int, end_time: Optional[int] = None) -> RecoverAnswer:
        return from_data(RecoverAnswer, self.call("callbackRecover", {"start_time": start_time, "end_time": end_time}))

    def callback_test(self, url: Optional[str] = None) -> CallbackTestAttempt:
        return from_data(CallbackTestAttempt, self.call("callbackTest", {"url": url}))

    # -- callbacks we receive ---------------------------------------------------------------------

    def verify_callback(self, headers: Mapping[str, str], raw_body: Union[bytes, str]) -> Optional[Callback]:
        """Both checks with the current and the previous secret: the typed event, or None when either fails."""
        return self.verifier.verify(headers, raw_body)

    def verify_callback_body(self, body: Mapping[str, Any], now: Optional[float] = None) -> bool:
        return self.verifier.body_verifies(body, now)

    def verify_callback_headers(self, headers: Mapping[str, str], raw_body: Union[bytes, str], now: Optional[float] = None) -> bool:
        return self.verifier.headers_verify(headers, raw_body, now)
