"""A client for the merchant-pay API: Python 3.8+, the standard library only.

    from merchant_pay_client import MerchantClient, MerchantError
    client = MerchantClient("https://pay.example.com/api", api_key, api_secret)
    order = client.create_order("100.00", 3, "alipay", merchant_order_no="A-1001")
    order.pay_url, order.cny_amount  # str, Decimal('100.00')

It signs requests exactly as the service checks them (SPEC 3), answers typed dataclasses (yuan
as Decimal, fen as int), raises MerchantError for any answer whose code is not 1, and verifies
callbacks both ways (the body's `signature` and the Standard Webhooks headers) with every secret
you hold.
"""
from .client import CALLBACK_TOLERANCE_SECONDS, CallbackVerifier, MerchantClient, MerchantError
from .models import (
    Balance,
    Balances,
    Callback,
    CallbackDelivery,
    CallbackTestAttempt,
    CreatedOrder,
    DeliveryAttempt,
    DeliveryList,
    Order,
    OrderCallback,
    OrderPage,
    PayChannel,
    PayChannelList,
    RecoverAnswer,
    Refund,
    RefundCallback,
    RefundList,
    ResendAnswer,
    SellOrder,
    Statement,
    StatementMovement,
    TestCallback,
    UnknownCallback,
    callback_from,
    from_data,
    yuan_text,
)
from .signing import canonical_json, canonical_string, sign

__version__ = "1.0.0"

__all__ = [
    "CALLBACK_TOLERANCE_SECONDS",
    "Balance",
    "Balances",
    "Callback",
    "CallbackDelivery",
    "CallbackTestAttempt",
    "CallbackVerifier",
    "CreatedOrder",
    "DeliveryAttempt",
    "DeliveryList",
    "MerchantClient",
    "MerchantError",
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
    "canonical_json",
    "canonical_string",
    "from_data",
    "sign",
    "yuan_text",
]
