#!/usr/bin/env python3
"""A merchant client for the merchant-pay service: Python 3.8+, standard library only.

Copy this one file into your project. It signs requests exactly as the service checks them
(SPEC 3), calls every merchant operation, raises MerchantError for any answer whose code is
not 1, and verifies callbacks both ways (the body's `signature` and the Standard Webhooks
headers).

As a library:
    client = MerchantClient("http://127.0.0.1:3000/api", api_key, api_secret)
    order = client.create_order(cny_amount="100.00", paychannel_id=1, paychannel_paymethod="alipay")

As a command (env MERCHANT_BASE_URL, MERCHANT_API_KEY, MERCHANT_API_SECRET, and during a
secret rotation's grace optionally MERCHANT_API_SECRET_PREVIOUS):
    python3 merchant_client.py call OPERATION '{"json":"params"}'   prints the answer's JSON on one line
    python3 merchant_client.py sign '{"json":"params"}'             prints the signature of those parameters
    python3 merchant_client.py verify 'HEADERS_JSON' < raw_body      checks a received callback
    python3 merchant_client.py demo                                  create an order, wait for its callbacks
"""
import base64
import decimal
import hashlib
import hmac
import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.request

__all__ = ["MerchantClient", "MerchantError", "canonical_string", "canonical_json", "sign"]

# A callback whose timestamp is further than this from now is refused (replays of old callbacks).
CALLBACK_TOLERANCE_SECONDS = 300


class MerchantError(Exception):
    """Any answer whose code is not 1 (SPEC 2), or no envelope at all (code 0: network, not JSON)."""

    def __init__(self, code, msg, data=None, http_status=None):
        super().__init__("MerchantError %s: %s" % (code, msg))
        self.code = code
        self.msg = msg
        self.data = data
        self.http_status = http_status


def _js_number(value):
    """A number as JavaScript's String(number) writes it (the service signs what it parsed)."""
    if isinstance(value, int) and abs(value) < 2 ** 53:
        return str(value)
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("NaN and Infinity are not JSON")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    digits_tuple, exponent = decimal.Decimal(repr(abs(value))).as_tuple()[1:]
    digits = "".join(map(str, digits_tuple)).rstrip("0") or "0"
    exponent += len("".join(map(str, digits_tuple))) - len(digits)
    k = len(digits)
    n = k + exponent  # value = 0.digits x 10^n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return sign + mantissa + "e" + ("+" if e >= 0 else "-") + str(abs(e))


def _json_string(text):
    """A string as JSON.stringify writes it: only quote, backslash and control characters escaped."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch in "\b\f\n\r\t":
            out.append({"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append("\\u%04x" % code)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _byte_order(key):
    return key.encode("utf-8", "surrogatepass")


def canonical_json(value):
    """JSON with keys sorted by UTF-8 bytes at every level and no whitespace (SPEC 3)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return _js_number(value)
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, dict):
        keys = sorted(value.keys(), key=_byte_order)
        return "{" + ",".join(_json_string(k) + ":" + canonical_json(value[k]) for k in keys) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    raise TypeError("cannot write %r as JSON" % (value,))


def _canonical_value(value):
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _js_number(value)
    return canonical_json(value)


def canonical_string(params):
    """key=value of every parameter but `signature`, without null or "" values, sorted by key bytes, joined by &."""
    keys = sorted((k for k, v in params.items() if k != "signature" and v is not None and v != ""), key=_byte_order)
    return "&".join(k + "=" + _canonical_value(params[k]) for k in keys)


def sign(params, api_secret):
    """Lowercase hex HMAC-SHA256 of the canonical string, keyed with the secret's UTF-8 bytes."""
    return hmac.new(api_secret.encode("utf-8"), canonical_string(params).encode("utf-8"), hashlib.sha256).hexdigest()


class MerchantClient:
    def __init__(self, base_url, api_key, api_secret, previous_secret=None, timeout=15):
        """base_url is SPEC's {base_url}, e.g. http://127.0.0.1:3000/api. previous_secret: the one a
        rotation replaced, accepted on callbacks during its grace (requests are signed with api_secret)."""
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.api_secret = api_secret
        self.secrets = [s for s in (api_secret, previous_secret) if s]
        self.timeout = timeout

    # -- requests -------------------------------------------------------------------------

    def signed_params(self, params):
        """The parameters with api_key, timestamp, nonce and signature added (None values left out)."""
        body = {k: v for k, v in params.items() if v is not None}
        body["api_key"] = self.api_key
        body["timestamp"] = int(time.time())
        body["nonce"] = secrets.token_hex(12)
        body["signature"] = sign(body, self.api_secret)
        return body

    def request(self, operation, params=None):
        """POST {base_url}/merchant/{operation}, signed; answers the envelope {code, msg, time, data} as it came
        (plus _http_status).
        Raises MerchantError(code 0) only when no envelope came back (network failure, not JSON): for a
        create, retry with the same merchant_order_no / merchant_refund_no, which is safe."""
        payload = canonical_json(self.signed_params(params or {})).encode("utf-8")
        req = urllib.request.Request(
            "%s/merchant/%s" % (self.base_url, operation),
            data=payload,
            method="POST",
            headers={"content-type": "application/json; charset=utf-8", "accept": "application/json"},
        )
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
            raise MerchantError(0, "HTTP %s answered something that is not JSON" % status, http_status=status)
        if not isinstance(envelope, dict) or "code" not in envelope:
            raise MerchantError(0, "HTTP %s answered JSON that is not an envelope" % status, http_status=status)
        envelope["_http_status"] = status
        return envelope

    @staticmethod
    def data_of(envelope):
        """The envelope's data when its code is 1, else MerchantError with its code, msg and data."""
        if envelope.get("code") != 1:
            raise MerchantError(envelope.get("code"), envelope.get("msg"), envelope.get("data"), envelope.get("_http_status"))
        return envelope.get("data")

    def call(self, operation, params=None):
        """Any operation by name (a new one works before this file knows it): its data, or MerchantError."""
        return self.data_of(self.request(operation, params))

    # -- orders (SPEC 5) ------------------------------------------------------------------

    def create_order(self, cny_amount, paychannel_id, paychannel_paymethod, **optional):
        """A top-up order (send amounts as text, "100.00"); optional: customer_name, merchant_order_no, notify_url."""
        return self.call("createOrder", dict(optional, order_type=1, cny_amount=cny_amount,
                                             paychannel_id=paychannel_id, paychannel_paymethod=paychannel_paymethod))

    def order_query_list(self, **filters):
        """page, limit, status, order_type, start_time, end_time: {list, total}, newest first."""
        return self.call("orderQueryList", filters)

    def order_query_detail(self, order_no=None, merchant_order_no=None):
        return self.call("orderQueryDetail", {"order_no": order_no, "merchant_order_no": merchant_order_no})

    def get_pay_channels(self, category=None):
        return self.call("getPayChannels", {"category": category})

    # -- money out (SPEC 6) ---------------------------------------------------------------

    def order_close(self, order_no):
        return self.call("orderClose", {"order_no": order_no})

    def refund_create(self, order_no, refund_amount, merchant_refund_no, reason=None, notify_url=None):
        """Refund a completed order, wholly or in part; the same merchant_refund_no makes a retry safe."""
        return self.call("refundCreate", {"order_no": order_no, "refund_amount": refund_amount,
                                          "merchant_refund_no": merchant_refund_no, "reason": reason, "notify_url": notify_url})

    def refund_query(self, refund_no=None, merchant_refund_no=None):
        return self.call("refundQuery", {"refund_no": refund_no, "merchant_refund_no": merchant_refund_no})

    def refund_query_list(self, order_no):
        return self.call("refundQueryList", {"order_no": order_no})

    def create_sell_order(self, cny_amount, paychannel_id, payee_name, payee_account, payee_bank, **optional):
        """A payout to your customer from your balance; optional: merchant_order_no, notify_url."""
        return self.call("createSellOrder", dict(optional, cny_amount=cny_amount, paychannel_id=paychannel_id,
                                                 payee_name=payee_name, payee_account=payee_account, payee_bank=payee_bank))

    def statement_query(self, date):
        """The day's statement (date YYYY-MM-DD, Asia/Shanghai): opening, movements, closing."""
        return self.call("statementQuery", {"date": date})

    # -- callback tools (SPEC 7) ----------------------------------------------------------

    def callback_resend(self, order_no):
        return self.call("callbackResend", {"order_no": order_no})

    def callback_query_list(self, order_no):
        return self.call("callbackQueryList", {"order_no": order_no})

    def callback_recover(self, start_time, end_time=None):
        return self.call("callbackRecover", {"start_time": start_time, "end_time": end_time})

    def callback_test(self, url=None):
        return self.call("callbackTest", {"url": url})

    # -- callbacks we receive -------------------------------------------------------------

    def verify_callback_body(self, body, now=None):
        """The body's `signature` (signed like a request), its api_key ours, its timestamp fresh."""
        signature = body.get("signature")
        if not isinstance(signature, str) or body.get("api_key") != self.api_key:
            return False
        if not _fresh(body.get("timestamp"), now):
            return False
        given = signature.lower().encode("utf-8")
        return any(hmac.compare_digest(sign(body, s).encode("utf-8"), given) for s in self.secrets)

    def verify_callback_headers(self, headers, raw_body, now=None):
        """Standard Webhooks: webhook-signature holds `v1,<base64 HMAC-SHA256 of id.timestamp.body>`
        entries (two during a rotation's grace); any entry with any of our secrets passes. raw_body:
        the exact bytes received."""
        h = {k.lower(): v for k, v in headers.items()}
        msg_id, timestamp, signatures = h.get("webhook-id"), h.get("webhook-timestamp"), h.get("webhook-signature")
        if not msg_id or not timestamp or not signatures or not _fresh(timestamp, now):
            return False
        if isinstance(raw_body, str):
            raw_body = raw_body.encode("utf-8")
        signed = msg_id.encode("utf-8") + b"." + timestamp.encode("utf-8") + b"." + raw_body
        expected = [base64.b64encode(hmac.new(s.encode("utf-8"), signed, hashlib.sha256).digest()).decode() for s in self.secrets]
        for entry in signatures.split(" "):
            version, _, value = entry.partition(",")
            if version == "v1" and any(hmac.compare_digest(value.encode("utf-8"), e.encode("utf-8")) for e in expected):
                return True
        return False

    def verify_callback(self, headers, raw_body):
        """Both checks on a received callback; answers its parsed body, or None when either fails."""
        try:
            body = json.loads(raw_body)
        except ValueError:
            return None
        if not isinstance(body, dict) or not self.verify_callback_headers(headers, raw_body) or not self.verify_callback_body(body):
            return None
        return body


def _fresh(timestamp, now):
    try:
        ts = int(timestamp)
    except (TypeError, ValueError):
        return False
    return abs((time.time() if now is None else now) - ts) <= CALLBACK_TOLERANCE_SECONDS


# -- command line -----------------------------------------------------------------------------

def _client_from_env():
    return MerchantClient(
        os.environ.get("MERCHANT_BASE_URL", "http://127.0.0.1:3000/api"),
        os.environ.get("MERCHANT_API_KEY", ""),
        os.environ.get("MERCHANT_API_SECRET", ""),
        os.environ.get("MERCHANT_API_SECRET_PREVIOUS") or None,
    )


def _one_line(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _demo(client):
    """Create an order whose notify_url is a receiver on DEMO_CALLBACK_PORT, print its pay_url, then print
    each callback with both signatures checked until order.completed (or order.cancelled)."""
    from http.server import BaseHTTPRequestHandler, HTTPServer

    port = int(os.environ.get("DEMO_CALLBACK_PORT", "4000"))
    done = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {k: v for k, v in self.headers.items()}
            body = json.loads(raw) if raw else {}
            ok_body = isinstance(body, dict) and client.verify_callback_body(body)
            ok_headers = client.verify_callback_headers(headers, raw)
            print("callback %s order %s status %s body-signature %s webhook-signature %s" % (
                body.get("event"), body.get("order_no"), body.get("status"),
                "valid" if ok_body else "INVALID", "valid" if ok_headers else "INVALID"), flush=True)
            answer = b"success" if ok_body and ok_headers else b"bad signature"
            self.send_response(200 if ok_body and ok_headers else 400)
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            if ok_body and ok_headers and body.get("event") in ("order.completed", "order.cancelled"):
                done.append(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", port), Receiver)
    try:
        channels = client.get_pay_channels()["list"]
        if not channels:
            raise MerchantError(0, "no payment channel is linked to this merchant")
        channel = channels[0]
        print("channels: " + "; ".join("%s %s (%s)" % (c["id"], c["name"], c["pay_method"]) for c in channels), flush=True)
        order = client.create_order(
            cny_amount=os.environ.get("DEMO_AMOUNT", "100.00"),
            paychannel_id=channel["id"],
            paychannel_paymethod=channel["pay_method"].split(",")[0],
            customer_name="Demo customer",
            notify_url="http://127.0.0.1:%d/callback" % port,
        )
        print("order %s is %s; open this to pay:" % (order["order_no"], order["status"]), flush=True)
        print("pay_url " + order["pay_url"], flush=True)
        print("waiting for callbacks on http://127.0.0.1:%d/callback ..." % port, flush=True)
        while not done:
            server.handle_request()
    except MerchantError as err:
        print("%s (data %s)" % (err, _one_line(err.data)), file=sys.stderr)
        return 1
    finally:
        server.server_close()
    return 0


def _json_object(text, what):
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        print("%s must be a JSON object" % what, file=sys.stderr)
        sys.exit(2)
    return value


def main(argv):
    usage = "usage: merchant_client.py call OPERATION '{json}' | sign '{json}' | verify 'HEADERS_JSON' < body | demo"
    if len(argv) < 1:
        print(usage, file=sys.stderr)
        return 2
    client = _client_from_env()
    command = argv[0]
    if not client.api_secret:
        print("MERCHANT_API_SECRET is not set", file=sys.stderr)
        return 2
    if command == "sign" and len(argv) == 2:
        print(sign(_json_object(argv[1], "the parameters"), client.api_secret))
        return 0
    if command == "call" and len(argv) in (2, 3):
        envelope = client.request(argv[1], _json_object(argv[2], "the parameters") if len(argv) == 3 else {})
        envelope.pop("_http_status", None)
        print(_one_line(envelope))
        try:
            client.data_of(envelope)
        except MerchantError as err:
            print(str(err), file=sys.stderr)
            return 1
        return 0
    if command == "verify" and len(argv) == 2:
        raw = sys.stdin.buffer.read()
        headers = _json_object(argv[1], "the headers")
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        result = {
            "body_signature": isinstance(body, dict) and client.verify_callback_body(body),
            "webhook_signature": client.verify_callback_headers(headers, raw),
        }
        print(_one_line(result))
        return 0 if all(result.values()) else 1
    if command == "demo" and len(argv) == 1:
        return _demo(client)
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except MerchantError as err:
        print(str(err), file=sys.stderr)
        sys.exit(1)
