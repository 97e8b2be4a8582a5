"""Request signing exactly as the service checks it (SPEC 3), tested against the shared vectors."""
import decimal
import hashlib
import hmac
from typing import Any, Mapping

__all__ = ["canonical_json", "canonical_string", "sign"]


def _js_number(value: Any) -> str:
    """A number as JavaScript's String(number) writes it (the service signs what it parsed)."""
    if isinstance(value, int) and abs(value) < 2**53:
        return str(value)
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("NaN and Infinity are not JSON")
    if value == 0:
        return "0"
    sign_ = "-" if value < 0 else ""
    digits_tuple, exponent = decimal.Decimal(repr(abs(value))).as_tuple()[1:]
    all_digits = "".join(map(str, digits_tuple))
    digits = all_digits.rstrip("0") or "0"
    exponent += len(all_digits) - len(digits)
    k = len(digits)
    n = k + exponent  # value = 0.digits x 10^n
    if k <= n <= 21:
        return sign_ + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign_ + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign_ + "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return sign_ + mantissa + "e" + ("+" if e >= 0 else "-") + str(abs(e))


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _json_string(text: str) -> str:
    """A string as JSON.stringify writes it: only quote, backslash and control characters escaped."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append("\\u%04x" % code)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _byte_order(key: str) -> bytes:
    return key.encode("utf-8", "surrogatepass")


def canonical_json(value: Any) -> str:
    """JSON with keys sorted by UTF-8 bytes at every level and no whitespace (SPEC 3).

    A Decimal is written as its text (send amounts as text: "100.00")."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, decimal.Decimal):
        return _json_string(str(value))
    if isinstance(value, (int, float)):
        return _js_number(value)
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, Mapping):
        keys = sorted(value.keys(), key=_byte_order)
        return "{" + ",".join(_json_string(k) + ":" + canonical_json(value[k]) for k in keys) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    raise TypeError("cannot write %r as JSON" % (value,))


def _canonical_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _js_number(value)
    return canonical_json(value)


def canonical_string(params: Mapping[str, Any]) -> str:
    """key=value of every parameter but `signature`, without null or "" values, sorted by key bytes, joined by &."""
    keys = sorted((k for k, v in params.items() if k != "signature" and v is not None and v != ""), key=_byte_order)
    return "&".join(k + "=" + _canonical_value(params[k]) for k in keys)


def sign(params: Mapping[str, Any], api_secret: str) -> str:
    """Lowercase hex HMAC-SHA256 of the canonical string, keyed with the secret's UTF-8 bytes."""
    return hmac.new(api_secret.encode("utf-8"), canonical_string(params).encode("utf-8"), hashlib.sha256).hexdigest()
