/**
 * The API's English words (SPEC 2): every error code's default `msg`, every validation message
 * and every other `msg` the merchant API writes. zh-CN.ts has exactly these keys and
 * placeholders. A placeholder `{field}` holds a parameter's name, written as the merchant sends it.
 */
export const en = {
  // Each error code's own words, when nothing more precise is said.
  'code.40000': 'Invalid parameters',
  'code.40100': 'Missing or malformed authentication parameter',
  'code.40101': 'Unknown api_key',
  'code.40102': 'Signature does not match',
  'code.40103': 'Timestamp outside the allowed window',
  'code.40104': 'Nonce already used',
  'code.40300': 'Merchant disabled',
  'code.40301': 'Payment channel not available to this merchant',
  'code.40302': 'Pay method not offered by this channel',
  'code.40400': 'Order not found',
  'code.40401': 'Region not found',
  'code.40402': 'Route not found',
  'code.40500': 'Method not allowed',
  'code.40900': 'merchant_order_no already used with different parameters',
  'code.40901': 'The state of the order or refund does not allow this operation',
  'code.40902': 'Available balance too low',
  'code.41300': 'Request body larger than 64 KiB',
  'code.41500': 'Body must be JSON (Content-Type: application/json) or a form (Content-Type: application/x-www-form-urlencoded)',
  'code.42900': 'Too many requests',
  'code.50000': 'Internal error',
  'code.50200': 'Payment channel failed',
  'code.50300': 'Service temporarily unavailable',

  // Success.
  ok: 'ok',
  'order.created': 'Order created',
  'order.repeat': 'Order already created with this merchant_order_no',
  'order.closed': 'Order closed',
  'order.alreadyCancelled': 'Order already cancelled',
  'sellOrder.created': 'Sell order created',
  'refund.created': 'Refund created',
  'refund.repeat': 'Refund already created with this merchant_refund_no',

  // The request itself: its body and its parameter map (SPEC 1, 3).
  'request.malformedBody': 'Malformed request body',
  'request.malformedJson': 'Malformed JSON body',
  'request.malformed': 'Malformed request',
  'params.queryOnce': 'must appear once in the query string',
  'params.bodyObject': 'must be a JSON object or a form',
  'params.jsonAsForm':
    'looks like JSON but was sent as a form (Content-Type: application/x-www-form-urlencoded), so it was not read as JSON: send it with Content-Type: application/json',
  'params.formOnce': 'must appear once in the form',
  'params.scalar': 'must be a string, number, boolean or null',
  'params.queryBodyDiffer': 'differs between the query string and the body',
  'params.nul': 'must not contain a NUL character',

  // Authentication (SPEC 3) and the rate limits (SPEC 8).
  'auth.required': 'is required',
  'auth.apiKeyFormat': 'must be the api_key the service issued',
  'auth.timestampFormat': 'must be integer Unix seconds',
  'auth.nonceFormat': 'must be 8 to 64 of A-Z a-z 0-9 _ -',
  'auth.signatureFormat': 'must be 64 hex characters',
  'auth.timestampWindow': "Timestamp outside the allowed window: it must be Unix seconds within {tolerance} s of the server's clock (the answer's time)",
  'auth.timestampWindowMilliseconds':
    "Timestamp outside the allowed window: it must be Unix seconds within {tolerance} s of the server's clock (the answer's time); it looks like milliseconds: send Unix seconds (Math.floor(Date.now() / 1000), time() in PHP)",
  'auth.canonical': 'Signature does not match: data.canonical is the string the service signed (HMAC-SHA256 with your api_secret); compare it with yours',
  'auth.apiKeyRateLimited': 'Too many requests for this api_key: its rate limit is reached; retry after the Retry-After seconds',
  'auth.addressBlocked':
    'Too many failed authentications from this address (bad signatures, unknown api_key, stale timestamps, used nonces): every merchant request from it is refused until Retry-After; fix the signing first',
  'auth.portalSignIn': 'Sign in to the merchant portal first: no session, or it expired',
  'auth.metricsToken': 'metrics: a valid bearer token is required',

  // A parameter's rules (the DTOs), one template per kind of rule.
  'field.required': '{field} is required',
  'field.string': '{field} must be a string',
  'field.singleString': 'must be a single string',
  'field.integer': '{field} must be an integer',
  'field.atLeast': '{field} must be at least {min}',
  'field.atMost': '{field} must be at most {max}',
  'field.between': '{field} must be from {min} to {max}',
  'field.outOfRange': '{field} is out of range',
  'field.maxLength': '{field} must be at most {max} characters',
  'field.oneOf': '{field} must be one of {values}',
  'field.eitherOf': '{field} must be {first} or {second}',
  'field.unixSeconds': '{field} must be Unix seconds',
  'field.integerUnixSeconds': '{field} must be integer Unix seconds',
  'field.ownNumber': '{field} must be 1 to 64 of A-Z a-z 0-9 _ -',
  'field.yuan': '{field} must be a yuan amount greater than 0 with at most 2 decimals, like "{example}"',
  'field.httpUrl': '{field} must be an absolute http or https URL without userinfo or backslash, of at most 512 characters',
  'field.text1To64': '{field} must be a string of 1 to 64 characters',
  'field.plainText': '{field} must be at most {max} characters, none of them a control character',
  'field.bankCard': '{field} must be a bank card number of 12 to 19 digits, sent as a string',
  'field.date': '{field} must be YYYY-MM-DD',
  'field.existingDate': 'must be a day that exists, YYYY-MM-DD',
  'field.notAfterToday': 'must not be after today (Asia/Shanghai)',
  'field.notValid': 'not valid',
  // A rule written without words of the tables keeps class-validator's text (validation.spec.ts checks there is none).
  'field.unlisted': '{text}',

  // Orders (SPEC 5).
  'order_type.buyOnly': 'order_type must be 1 (buy); createOrder makes buy orders only',
  'orderKey.both': 'send order_no or merchant_order_no, not both',
  'orderKey.none': 'order_no or merchant_order_no is required',
  'start_time.afterEnd': 'must not be after end_time',
  'cny_amount.channelRange': 'must be from {min} to {max} on this channel',
  'order.channelFailed': 'Payment channel failed; the order was cancelled',
  'order.sellNotClosable': 'A sell order cannot be closed: its payout is with the channel',
  'order.notClosable': 'An order that is {status} cannot be closed',
  'order.conflict': 'merchant_order_no already used with different parameters: data.differs names them, data.order_no is the first order',
  'channel.notLinked': 'Payment channel {paychannel_id} is not linked to this merchant, or is disabled: data.linked lists the channels you can use',
  'sellOrder.noPayouts': 'This payment channel does not pay out (no sell orders)',

  // Refunds (SPEC 5 Money out).
  'refund.notFound': 'Refund not found',
  'refundKey.none': 'refund_no or merchant_refund_no is required',
  'refund.conflict': 'merchant_refund_no already used with different parameters: data.differs names them, data.refund_no is the first refund',
  'refund.processing': 'A refund of this order is still processing',
  'refund.notRefundable': 'Only a completed buy order can be refunded; this one is {status}',
  'refund_amount.exceeds': 'exceeds what is left to refund of this order ({left})',
  'refund.channelNoRefunds': 'This payment channel does not offer refunds',

  // Callbacks and their addresses (SPEC 7).
  'notifyUrl.loopback': '{host} is this machine (loopback); callbacks go to public addresses only',
  'notifyUrl.blockedRange': '{host} is a {range} address; callbacks go to public addresses only',
  'callbackTest.urlRequired': 'url is required: this merchant has no notify URL to send the test event to',
  'callbackRecover.tooOld': 'start_time must be within the last 7 days (not before {since})',
  'callbackRecover.future': 'start_time must not be in the future',
  'callbackRecover.endBeforeStart': 'end_time must not be before start_time',

  // Payment channels' notifications (SPEC 6).
  'notify.unknownChannel': 'unknown payment channel',
  'notify.badSignature': 'Notification signature does not verify',
  'notify.amountMismatch': 'does not equal the order amount',

  // Region data (SPEC 4).
  'region.provinceNotFound': 'province not found',
  'region.cityNotFound': 'city not found in this province',
} as const;

export type ApiMessageKey = keyof typeof en;
