"""The client as a command, the same as the PHP and Java clients' (env MERCHANT_BASE_URL,
MERCHANT_API_KEY, MERCHANT_API_SECRET, and during a rotation's grace MERCHANT_API_SECRET_PREVIOUS):

    merchant-pay-client call OPERATION '{"json":"params"}'    the answer's JSON on one line
    merchant-pay-client typed OPERATION '{"json":"params"}'   the typed answer (repr of its dataclass)
    merchant-pay-client sign '{"json":"params"}'              the signature of those parameters
    merchant-pay-client verify 'HEADERS_JSON' < raw_body       checks a received callback
    merchant-pay-client demo                                   create an order, wait for its callbacks

(`python -m merchant_pay_client ...` is the same.)
"""
import json
import os
import sys
from typing import Any, Callable, Dict, List, Optional

from .client import CallbackVerifier, MerchantClient, MerchantError
from .models import OrderCallback
from .signing import sign

USAGE = "usage: merchant-pay-client call OPERATION '{json}' | typed OPERATION '{json}' | sign '{json}' | verify 'HEADERS_JSON' < body | demo"


class UsageError(Exception):
    pass


def _one_line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _json_object(text: str, what: str) -> Dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise UsageError("%s must be a JSON object" % what)
    return value


def _env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        hint = " (your {base_url}, e.g. http://127.0.0.1:3000/api)" if name == "MERCHANT_BASE_URL" else ""
        raise UsageError("%s is not set%s" % (name, hint))
    return value


def _client() -> MerchantClient:
    return MerchantClient(_env("MERCHANT_BASE_URL"), _env("MERCHANT_API_KEY"), _env("MERCHANT_API_SECRET"), os.environ.get("MERCHANT_API_SECRET_PREVIOUS") or None)


# The typed methods by operation name, for `typed`: params are the operation's own names.
TYPED: Dict[str, Callable[[MerchantClient, Dict[str, Any]], Any]] = {
    "createOrder": lambda c, p: c.create_order(p.pop("cny_amount"), p.pop("paychannel_id"), p.pop("paychannel_paymethod"), **{k: v for k, v in p.items() if k != "order_type"}),
    "orderQueryList": lambda c, p: c.order_query_list(**p),
    "orderQueryDetail": lambda c, p: c.order_query_detail(**p),
    "getPayChannels": lambda c, p: c.get_pay_channels(**p),
    "orderClose": lambda c, p: c.order_close(**p),
    "refundCreate": lambda c, p: c.refund_create(**p),
    "refundQuery": lambda c, p: c.refund_query(**p),
    "refundQueryList": lambda c, p: c.refund_query_list(**p),
    "createSellOrder": lambda c, p: c.create_sell_order(**p),
    "statementQuery": lambda c, p: c.statement_query(**p),
    "balanceQuery": lambda c, p: c.balance_query(),
    "callbackResend": lambda c, p: c.callback_resend(**p),
    "callbackQueryList": lambda c, p: c.callback_query_list(**p),
    "callbackRecover": lambda c, p: c.callback_recover(**p),
    "callbackTest": lambda c, p: c.callback_test(**p),
}


def _demo(client: MerchantClient) -> int:
    """Create an order whose notify_url is a receiver on DEMO_CALLBACK_PORT, print its pay_url, then print
    each callback with both signatures checked until order.completed (or order.cancelled)."""
    from http.server import BaseHTTPRequestHandler, HTTPServer

    port = int(os.environ.get("DEMO_CALLBACK_PORT", "4000"))
    done: List[OrderCallback] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {k: v for k, v in self.headers.items()}
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            ok_body = isinstance(body, dict) and client.verify_callback_body(body)
            ok_headers = client.verify_callback_headers(headers, raw)
            callback = client.verify_callback(headers, raw)
            shown = body if isinstance(body, dict) else {}
            print("callback %s order %s status %s body-signature %s webhook-signature %s" % (
                shown.get("event"), shown.get("order_no"), shown.get("status"),
                "valid" if ok_body else "INVALID", "valid" if ok_headers else "INVALID"), flush=True)
            answer = b"success" if callback is not None else b"bad signature"
            self.send_response(200 if callback is not None else 400)
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            if isinstance(callback, OrderCallback) and callback.event in ("order.completed", "order.cancelled"):
                done.append(callback)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", port), Receiver)
    try:
        channels = client.get_pay_channels().list
        if not channels:
            raise MerchantError(0, "no payment channel is linked to this merchant")
        channel = channels[0]
        print("channels: " + "; ".join("%s %s (%s)" % (c.id, c.name, c.pay_method) for c in channels), flush=True)
        order = client.create_order(
            os.environ.get("DEMO_AMOUNT", "100.00"),
            channel.id,
            channel.pay_methods[0],
            customer_name="Demo customer",
            notify_url="http://127.0.0.1:%d/callback" % port,
        )
        print("order %s is %s; open this to pay:" % (order.order_no, order.status), flush=True)
        print("pay_url %s" % order.pay_url, flush=True)
        print("waiting for callbacks on http://127.0.0.1:%d/callback ..." % port, flush=True)
        while not done:
            server.handle_request()
    except MerchantError as err:
        print("%s (data %s)" % (err, _one_line(err.data)), file=sys.stderr)
        return 1
    finally:
        server.server_close()
    return 0


def run(argv: List[str]) -> int:
    command = argv[0] if argv else ""
    if command == "sign" and len(argv) == 2:
        print(sign(_json_object(argv[1], "the parameters"), _env("MERCHANT_API_SECRET")))
        return 0
    if command == "verify" and len(argv) == 2:
        verifier = CallbackVerifier(_env("MERCHANT_API_KEY"), [_env("MERCHANT_API_SECRET"), os.environ.get("MERCHANT_API_SECRET_PREVIOUS")])
        raw = sys.stdin.buffer.read()
        headers = {k: str(v) for k, v in _json_object(argv[1], "the headers").items()}
        try:
            body: Optional[Any] = json.loads(raw)
        except ValueError:
            body = None
        result = {
            "body_signature": isinstance(body, dict) and verifier.body_verifies(body),
            "webhook_signature": verifier.headers_verify(headers, raw),
        }
        print(_one_line(result))
        return 0 if all(result.values()) else 1
    if command == "call" and len(argv) in (2, 3):
        client = _client()
        envelope = client.request(argv[1], _json_object(argv[2], "the parameters") if len(argv) == 3 else {})
        envelope.pop("_http_status", None)
        print(_one_line(envelope))
        client.data_of(envelope)
        return 0
    if command == "typed" and len(argv) in (2, 3) and argv[1] in TYPED:
        client = _client()
        print(repr(TYPED[argv[1]](client, _json_object(argv[2], "the parameters") if len(argv) == 3 else {})))
        return 0
    if command == "demo" and len(argv) == 1:
        return _demo(_client())
    raise UsageError(USAGE)


def main(argv: Optional[List[str]] = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except MerchantError as err:
        print(str(err), file=sys.stderr)
        return 1
    except (UsageError, ValueError, TypeError) as err:
        print(str(err), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
