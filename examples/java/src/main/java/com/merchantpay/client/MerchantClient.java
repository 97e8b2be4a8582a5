package com.merchantpay.client;

import java.io.IOException;
import java.math.BigDecimal;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A client for the merchant-pay API: Java 17, JDK only ({@code java.net.http}, {@code javax.crypto}).
 *
 * <pre>{@code
 * var client = new MerchantClient("https://pay.example.com/api", apiKey, apiSecret);
 * CreatedOrder order = client.createOrder(new BigDecimal("100.00"), 3, "alipay", Map.of("merchant_order_no", "A-1001"));
 * }</pre>
 *
 * It signs requests exactly as the service checks them (SPEC 3), answers typed records (yuan as
 * {@code BigDecimal}, fen as {@code long}, see {@link Money}), throws {@link MerchantError} for any
 * answer whose code is not 1, and verifies callbacks both ways with every secret you hold
 * ({@link #verifyCallback}).
 */
public final class MerchantClient {
    private static final SecureRandom RANDOM = new SecureRandom();

    private final String baseUrl;
    private final String apiKey;
    private final String apiSecret;
    private final CallbackVerifier verifier;
    private final HttpClient http;
    private final Duration timeout;

    /** baseUrl is SPEC's {base_url}, e.g. https://pay.example.com/api. */
    public MerchantClient(String baseUrl, String apiKey, String apiSecret) {
        this(baseUrl, apiKey, apiSecret, null, Duration.ofSeconds(15));
    }

    /**
     * previousSecret: the secret a rotation replaced, accepted on callbacks during its grace
     * (requests are signed with apiSecret); null outside a rotation.
     *
     * @throws IllegalArgumentException when baseUrl is missing or not an absolute http(s) URL, or a credential is missing
     */
    public MerchantClient(String baseUrl, String apiKey, String apiSecret, String previousSecret, Duration timeout) {
        this.baseUrl = checkedBaseUrl(baseUrl);
        if (apiKey == null || apiKey.isBlank() || apiSecret == null || apiSecret.isBlank()) {
            throw new IllegalArgumentException("MerchantClient: apiKey and apiSecret are both required");
        }
        this.apiKey = apiKey;
        this.apiSecret = apiSecret;
        this.verifier = new CallbackVerifier(apiKey, apiSecret, previousSecret);
        this.timeout = timeout;
        this.http = HttpClient.newBuilder().connectTimeout(timeout).followRedirects(HttpClient.Redirect.NEVER).build();
    }

    private static String checkedBaseUrl(String baseUrl) {
        if (baseUrl == null || baseUrl.isBlank()) {
            throw new IllegalArgumentException("MerchantClient: the base URL is missing: give your {base_url}, e.g. https://pay.example.com/api");
        }
        try {
            URI uri = new URI(baseUrl.strip());
            if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null) throw new URISyntaxException(baseUrl, "not absolute");
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("MerchantClient: the base URL '" + baseUrl + "' is not an absolute http(s) URL such as https://pay.example.com/api");
        }
        return baseUrl.strip().replaceAll("/+$", "");
    }

    // -- requests --------------------------------------------------------------------------------

    /** The parameters with api_key, timestamp, nonce and signature added (null values left out). */
    public Map<String, Object> signedParams(Map<String, ?> params) {
        Map<String, Object> body = new LinkedHashMap<>();
        params.forEach((k, v) -> {
            if (v != null) body.put(k, v);
        });
        byte[] nonce = new byte[12];
        RANDOM.nextBytes(nonce);
        body.put("api_key", apiKey);
        body.put("timestamp", System.currentTimeMillis() / 1000);
        body.put("nonce", HexFormat.of().formatHex(nonce));
        body.put("signature", Signing.sign(body, apiSecret));
        return body;
    }

    /**
     * POST {base_url}/merchant/{operation}, signed; answers the envelope {code, msg, time, data} as it
     * came (plus _http_status). Throws MerchantError (code 0) only when no envelope came back (network
     * failure, not JSON): for a create, retry with the same merchant_order_no / merchant_refund_no, which is safe.
     */
    @SuppressWarnings("unchecked")
    public Map<String, Object> request(String operation, Map<String, ?> params) {
        HttpRequest req = HttpRequest.newBuilder(URI.create(baseUrl + "/merchant/" + operation))
            .timeout(timeout)
            .header("Content-Type", "application/json; charset=utf-8")
            .header("Accept", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(Json.write(signedParams(params), true), StandardCharsets.UTF_8))
            .build();
        HttpResponse<String> res;
        try {
            res = http.send(req, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new MerchantError(0, "no answer from " + baseUrl + ": " + e, null, null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new MerchantError(0, "interrupted waiting for " + baseUrl, null, null);
        }
        Object envelope;
        try {
            envelope = Json.parse(res.body());
        } catch (IllegalArgumentException e) {
            throw new MerchantError(0, "HTTP " + res.statusCode() + " answered something that is not JSON", null, res.statusCode());
        }
        if (!(envelope instanceof Map) || !((Map<String, Object>) envelope).containsKey("code")) {
            throw new MerchantError(0, "HTTP " + res.statusCode() + " answered JSON that is not an envelope", null, res.statusCode());
        }
        Map<String, Object> map = (Map<String, Object>) envelope;
        map.put("_http_status", res.statusCode());
        return map;
    }

    /** The envelope's data when its code is 1, else MerchantError with its code, msg and data. */
    public static Object dataOf(Map<String, Object> envelope) {
        Object code = envelope.get("code");
        if (!(code instanceof Long && (Long) code == 1)) {
            int c = code instanceof Number ? ((Number) code).intValue() : 0;
            Object status = envelope.get("_http_status");
            throw new MerchantError(c, String.valueOf(envelope.get("msg")), envelope.get("data"), status instanceof Integer ? (Integer) status : null);
        }
        return envelope.get("data");
    }

    /** Any operation by name (one this version does not know yet too): its data as Map / List / String / Long..., or MerchantError. */
    public Object call(String operation, Map<String, ?> params) {
        return dataOf(request(operation, params));
    }

    private Fields answer(String operation, Map<String, ?> params) {
        return Fields.of(call(operation, params), operation);
    }

    private static Map<String, Object> params(Object... keyValues) {
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) map.put((String) keyValues[i], keyValues[i + 1]);
        return map;
    }

    private static Map<String, Object> with(Map<String, Object> required, Map<String, ?> optional) {
        Map<String, Object> map = new LinkedHashMap<>(optional == null ? Map.of() : optional);
        map.putAll(required);
        return map;
    }

    // -- orders (SPEC 5) -------------------------------------------------------------------------

    /**
     * A top-up order of cnyAmount yuan (two places at most). optional: merchant_order_no (makes a
     * retry safe), notify_url, customer_name, subject, return_url; or null.
     */
    public CreatedOrder createOrder(BigDecimal cnyAmount, long paychannelId, String paychannelPaymethod, Map<String, ?> optional) {
        return CreatedOrder.from(answer("createOrder", with(params("order_type", 1, "cny_amount", Money.yuanText(cnyAmount), "paychannel_id", paychannelId,
            "paychannel_paymethod", paychannelPaymethod), optional)));
    }

    /** filters: page, limit, status, order_type, start_time, end_time (or an empty map). Newest first. */
    public OrderPage orderQueryList(Map<String, ?> filters) {
        return OrderPage.from(answer("orderQueryList", filters == null ? Map.of() : filters));
    }

    /** By orderNo or merchantOrderNo: pass null for the other. */
    public Order orderQueryDetail(String orderNo, String merchantOrderNo) {
        return Order.from(answer("orderQueryDetail", params("order_no", orderNo, "merchant_order_no", merchantOrderNo)));
    }

    /** category: processor, remotepay, warehouse, or null for all. */
    public PayChannels getPayChannels(String category) {
        return PayChannels.from(answer("getPayChannels", params("category", category)));
    }

    // -- money out (SPEC 6) ----------------------------------------------------------------------

    /** Close a pending order (also answers a cancelled one; 40901 once paid). */
    public Order orderClose(String orderNo) {
        return Order.from(answer("orderClose", params("order_no", orderNo)));
    }

    /** Refund a completed order, wholly or in part; the same merchantRefundNo makes a retry safe. optional: reason, notify_url; or null. */
    public Refund refundCreate(String orderNo, BigDecimal refundAmount, String merchantRefundNo, Map<String, ?> optional) {
        return Refund.from(answer("refundCreate", with(params("order_no", orderNo, "refund_amount", Money.yuanText(refundAmount), "merchant_refund_no",
            merchantRefundNo), optional)));
    }

    /** By refundNo or merchantRefundNo: pass null for the other. */
    public Refund refundQuery(String refundNo, String merchantRefundNo) {
        return Refund.from(answer("refundQuery", params("refund_no", refundNo, "merchant_refund_no", merchantRefundNo)));
    }

    public Refunds refundQueryList(String orderNo) {
        return Refunds.from(answer("refundQueryList", params("order_no", orderNo)));
    }

    /** A payout to your customer from your balance (cnyAmount plus the fee is debited at once); optional: merchant_order_no, notify_url; or null. */
    public SellOrder createSellOrder(BigDecimal cnyAmount, long paychannelId, String payeeName, String payeeAccount, String payeeBank, Map<String, ?> optional) {
        return SellOrder.from(answer("createSellOrder", with(params("cny_amount", Money.yuanText(cnyAmount), "paychannel_id", paychannelId, "payee_name", payeeName,
            "payee_account", payeeAccount, "payee_bank", payeeBank), optional)));
    }

    /** The day's statement (date YYYY-MM-DD, Asia/Shanghai): opening, movements, closing, in fen. */
    public Statement statementQuery(String date) {
        return statementQuery(date, null, null);
    }

    /** A page of the day's movements (page from 1, limit 1..500); null for the defaults. */
    public Statement statementQuery(String date, Integer page, Integer limit) {
        return Statement.from(answer("statementQuery", params("date", date, "page", page, "limit", limit)));
    }

    /** Your available and deposit balances now, in fen (SPEC 6 balanceQuery). */
    public Balance balanceQuery() {
        return Balance.from(answer("balanceQuery", Map.of()));
    }

    // -- callback tools (SPEC 7) -----------------------------------------------------------------

    public ResendAnswer callbackResend(String orderNo) {
        return ResendAnswer.from(answer("callbackResend", params("order_no", orderNo)));
    }

    public Deliveries callbackQueryList(String orderNo) {
        return Deliveries.from(answer("callbackQueryList", params("order_no", orderNo)));
    }

    /** endTime may be null (now). */
    public RecoverAnswer callbackRecover(long startTime, Long endTime) {
        return RecoverAnswer.from(answer("callbackRecover", params("start_time", startTime, "end_time", endTime)));
    }

    /** url may be null (your notify URL). */
    public CallbackTestAttempt callbackTest(String url) {
        return CallbackTestAttempt.from(answer("callbackTest", params("url", url)));
    }

    // -- callbacks we receive --------------------------------------------------------------------

    /** The verifier with this client's secrets (the current one and the previous one given). */
    public CallbackVerifier verifier() {
        return verifier;
    }

    /** Both checks on a received callback: its typed event, or null when either fails. rawBody: the exact bytes received. */
    public Callback verifyCallback(Map<String, String> headers, byte[] rawBody) {
        return verifier.verify(headers, rawBody);
    }
}
