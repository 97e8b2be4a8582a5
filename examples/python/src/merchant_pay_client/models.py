"""Typed answers and callbacks. Money: every yuan amount is a Decimal with two places
(`cny_amount`, `merchant_amount`, `refund_amount`), every fen amount an int (`service_amount`,
`deposit_amount`, `merchant_actual_amount`, `*_fen`); never a float. Times are Unix seconds.

Fields the service adds later (SPEC 9: changes are additive) land in `extra` instead of failing.
"""
import dataclasses
import decimal
import sys
import typing
from typing import Any, Dict, List, Mapping, Optional, Type, TypeVar, Union

__all__ = [
    "Balance",
    "Balances",
    "Callback",
    "CallbackDelivery",
    "CallbackTestAttempt",
    "CreatedOrder",
    "DeliveryAttempt",
    "DeliveryList",
    "Order",
    "OrderCallback",
    "OrderPage",
    "PayChannel",
    "PayChannelList",
    "RecoverAnswer",
    "Refund",
    "RefundCallback",
    "RefundList",
    "ResendAnswer",
    "SellOrder",
    "Statement",
    "StatementMovement",
    "TestCallback",
    "UnknownCallback",
    "callback_from",
    "from_data",
    "yuan_text",
]

T = TypeVar("T")


def yuan_text(amount: Union[decimal.Decimal, str, int]) -> str:
    """Yuan as the service takes it, decimal text with two places: Decimal("100") -> "100.00".
    Refuses a float (not exact), a third decimal place (never rounded away) and anything not > 0."""
    if isinstance(amount, float) or isinstance(amount, bool):
        raise TypeError("give yuan as a Decimal or text such as '100.00', never a float")
    try:
        value = decimal.Decimal(amount)
    except decimal.InvalidOperation:
        raise ValueError("%r is not an amount in yuan" % (amount,)) from None
    if not value.is_finite() or value != value.quantize(decimal.Decimal("0.01"), rounding=decimal.ROUND_DOWN):
        raise ValueError("%r has more than two decimal places: yuan are counted to the fen" % (amount,))
    if value <= 0:
        raise ValueError("%r is not greater than 0" % (amount,))
    return str(value.quantize(decimal.Decimal("0.01")))


@dataclasses.dataclass(frozen=True)
class PayChannel:
    id: int
    category: str
    name: str
    pay_method: str
    category_text: str
    pay_method_text: str
    createtime: int
    updatetime: int
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)

    @property
    def pay_methods(self) -> List[str]:
        return [m for m in self.pay_method.split(",") if m]


@dataclasses.dataclass(frozen=True)
class PayChannelList:
    list: List[PayChannel]
    total: int
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class CreatedOrder:
    """createOrder's answer (the first order again for a repeated merchant_order_no)."""

    order_no: str
    merchant_order_no: Optional[str]
    status: str
    order_type: int
    cny_amount: decimal.Decimal
    payment_method: Optional[str]
    merchant_amount: decimal.Decimal
    deposit_amount: int
    service_amount: int
    merchant_actual_amount: int
    createtime: int
    pay_url: Optional[str]
    expires_at: Optional[int] = None
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class SellOrder(CreatedOrder):
    """createSellOrder's answer: createOrder's fields (order_type 2, pay_url None) and the payee, its account masked."""

    payee_name: Optional[str] = None
    payee_bank: Optional[str] = None
    payee_account: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Order:
    """An order as orderQueryDetail, orderQueryList and orderClose answer it."""

    order_no: str
    merchant_order_no: Optional[str]
    order_type: int
    cny_amount: decimal.Decimal
    merchant_actual_amount: int
    service_rate: decimal.Decimal
    service_amount: int
    status: str
    createtime: int
    updatetime: int
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class OrderPage:
    list: List[Order]
    total: int
    page: int
    limit: int
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class Refund:
    refund_no: str
    merchant_refund_no: str
    order_no: str
    refund_amount: decimal.Decimal
    status: str
    reason: Optional[str]
    createtime: int
    updatetime: int
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class RefundList:
    list: List[Refund]
    total: int
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class Balances:
    available_fen: int
    deposit_fen: int
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class StatementMovement:
    entry_id: str
    time: int
    kind: str
    account: str
    amount_fen: int
    order_no: str
    merchant_order_no: Optional[str]
    refund_no: Optional[str]
    available_after_fen: int
    deposit_after_fen: int
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class Statement:
    """One Asia/Shanghai day of your balance (statementQuery): the movements sum to closing - opening."""

    date: str
    timezone: str
    opening_balance: Balances
    closing_balance: Balances
    movements: List[StatementMovement]
    total: int
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class Balance:
    """balanceQuery (SPEC 6): your balances now, in fen, as of `as_of` (Unix seconds)."""

    available_fen: int
    deposit_fen: int
    as_of: int
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class ResendAnswer:
    event_id: str
    event: str
    delivery_id: str
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class DeliveryAttempt:
    at: int
    http_status: Optional[int]
    duration_ms: int
    error: Optional[str]
    response_excerpt: Optional[str]
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class CallbackDelivery:
    delivery_id: str
    event_id: str
    event: str
    url: Optional[str]
    status: str
    attempts: List[DeliveryAttempt]
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class DeliveryList:
    list: List[CallbackDelivery]
    total: int
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class RecoverAnswer:
    queued: int
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class CallbackTestAttempt:
    url: str
    http_status: Optional[int]
    duration_ms: int
    success: bool
    error: Optional[str]
    response_excerpt: Optional[str]
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


# -- callbacks (SPEC 7) ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class OrderCallback:
    """order.paid, order.completed, order.cancelled (`reason` says why: expired, closed, ...)."""

    event_id: str
    event: str
    order_no: str
    merchant_order_no: Optional[str]
    order_type: int
    status: str
    cny_amount: decimal.Decimal
    merchant_actual_amount: int
    service_rate: decimal.Decimal
    service_amount: int
    createtime: int
    updatetime: int
    paid_at: Optional[int] = None
    reason: Optional[str] = None
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class RefundCallback:
    """refund.succeeded, refund.failed."""

    event_id: str
    event: str
    refund_no: str
    merchant_refund_no: str
    order_no: str
    merchant_order_no: Optional[str]
    refund_amount: decimal.Decimal
    status: str
    reason: Optional[str]
    createtime: int
    updatetime: int
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class TestCallback:
    """webhook.test (callbackTest, the portal's Send test event): verify, answer success, do nothing else."""

    __test__ = False  # not a test case, whatever a test runner guesses from the name

    event_id: str
    event: str
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass(frozen=True)
class UnknownCallback:
    """An event this version of the client does not know yet: its fields are in `extra`."""

    event_id: str
    event: str
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


Callback = Union[OrderCallback, RefundCallback, TestCallback, UnknownCallback]

# The signing fields every callback carries; checked by the verifier, not part of the event.
_SIGNING_FIELDS = ("api_key", "timestamp", "nonce", "signature")


def callback_from(body: Mapping[str, Any]) -> Callback:
    """The typed event of a callback body (verify it first: CallbackVerifier.verify does both)."""
    event = str(body.get("event", ""))
    fields = {k: v for k, v in body.items() if k not in _SIGNING_FIELDS}
    if event.startswith("order."):
        return from_data(OrderCallback, fields)
    if event.startswith("refund."):
        return from_data(RefundCallback, fields)
    if event == "webhook.test":
        return from_data(TestCallback, fields)
    return from_data(UnknownCallback, fields)


# -- from JSON ------------------------------------------------------------------------------------


def _hints(cls: type) -> Dict[str, Any]:
    return typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))


def _convert(kind: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = getattr(kind, "__origin__", None)
    args = getattr(kind, "__args__", ())
    if origin is Union:  # Optional[X]
        inner = [a for a in args if a is not type(None)]
        return _convert(inner[0], value) if len(inner) == 1 else value
    if origin in (list, List):
        return [_convert(args[0], v) for v in value] if isinstance(value, list) else value
    if kind is decimal.Decimal:
        return decimal.Decimal(value if isinstance(value, str) else str(value))
    if dataclasses.is_dataclass(kind) and isinstance(value, Mapping):
        return from_data(kind, value)
    if kind is int and isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return value


def from_data(cls: Type[T], data: Mapping[str, Any]) -> T:
    """An answer's `data` (or a callback body) as the dataclass `cls`: yuan to Decimal, nested
    objects to their dataclasses, unknown fields kept in `extra`, a missing field None."""
    hints = _hints(cls)
    known = {f.name for f in dataclasses.fields(cls) if f.name != "extra"}
    values = {name: _convert(hints[name], data.get(name)) for name in known}
    values["extra"] = {k: v for k, v in data.items() if k not in known}
    return cls(**values)  # type: ignore[call-arg]
