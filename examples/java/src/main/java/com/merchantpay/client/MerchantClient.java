/*
 * A merchant client for the merchant-pay service: Java 17, JDK only (java.net.http, javax.crypto).
 *
 * Copy this one file into your project (add your package line). It signs requests exactly as the
 * service checks them (SPEC 3), calls every merchant operation, throws MerchantClient.MerchantError
 * for any answer whose code is not 1, and verifies callbacks both ways (the body's `signature` and
 * the Standard Webhooks headers). JSON in and out is plain Map / List / String / Number / Boolean.
 *
 * As a library:
 *   var client = new MerchantClient("http://127.0.0.1:3000/api", apiKey, apiSecret);
 *   Map<String, Object> order = client.createOrder("100.00", 1, "alipay", Map.of("merchant_order_no", "A-1001"));
 *
 * As a command (env MERCHANT_BASE_URL, MERCHANT_API_KEY, MERCHANT_API_SECRET, and during a secret
 * rotation's grace optionally MERCHANT_API_SECRET_PREVIOUS):
 *   java MerchantClient.java call OPERATION '{"json":"params"}'   prints the answer's JSON on one line
 *   java MerchantClient.java sign '{"json":"params"}'             prints the signature of those parameters
 *   java MerchantClient.java verify 'HEADERS_JSON' < raw_body      checks a received callback
 *   java MerchantClient.java demo                                  create an order, wait for its callbacks
 */

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.math.RoundingMode;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

public final class MerchantClient {
    /** A callback whose timestamp is further than this from now is refused (replays of old callbacks). */
    public static final long CALLBACK_TOLERANCE_SECONDS = 300;

    /** Any answer whose code is not 1 (SPEC 2), or no envelope at all (code 0: network, not JSON). */
    public static final class MerchantError extends RuntimeException {
        private static final long serialVersionUID = 1L;
        public final int code;
        public final String msg;
        public final transient Object data;
        public final Integer httpStatus;

        public MerchantError(int code, String msg, Object data, Integer httpStatus) {
            super("MerchantError " + code + ": " + msg);
            this.code = code;
            this.msg = msg;
            this.data = data;
            this.httpStatus = httpStatus;
        }
    }

    private final String baseUrl;
    private final String apiKey;
    private final String apiSecret;
    private final List<String> secrets = new ArrayList<>();
    private final HttpClient http;
    private final Duration timeout;
    private static final SecureRandom RANDOM = new SecureRandom();

    /** baseUrl is SPEC's {base_url}, e.g. http://127.0.0.1:3000/api. */
    public MerchantClient(String baseUrl, String apiKey, String apiSecret) {
        this(baseUrl, apiKey, apiSecret, null, Duration.ofSeconds(15));
    }

    /** previousSecret: the secret a rotation replaced, accepted on callbacks during its grace (requests use apiSecret). */
    public MerchantClient(String baseUrl, String apiKey, String apiSecret, String previousSecret, Duration timeout) {
        this.baseUrl = baseUrl.replaceAll("/+$", "");
        this.apiKey = apiKey;
        this.apiSecret = apiSecret;
        for (String s : new String[] {apiSecret, previousSecret}) if (s != null && !s.isEmpty()) secrets.add(s);
        this.timeout = timeout;
        this.http = HttpClient.newBuilder().connectTimeout(timeout).followRedirects(HttpClient.Redirect.NEVER).build();
    }

    // -- signing (SPEC 3) ------------------------------------------------------------------------

    /** key=value of every parameter but `signature`, without null or "" values, sorted by key bytes, joined by &. */
    public static String canonicalString(Map<String, ?> params) {
        List<String> keys = new ArrayList<>();
        for (Map.Entry<String, ?> e : params.entrySet()) {
            Object v = e.getValue();
            if (!e.getKey().equals("signature") && v != null && !"".equals(v)) keys.add(e.getKey());
        }
        keys.sort(MerchantClient::byteOrder);
        StringBuilder out = new StringBuilder();
        for (String key : keys) {
            if (out.length() > 0) out.append('&');
            Object v = params.get(key);
            out.append(key).append('=').append(v instanceof String ? (String) v : Json.write(v, true));
        }
        return out.toString();
    }

    /** Lowercase hex HMAC-SHA256 of the canonical string, keyed with the secret's UTF-8 bytes. */
    public static String sign(Map<String, ?> params, String apiSecret) {
        return HexFormat.of().formatHex(hmac(apiSecret, canonicalString(params).getBytes(StandardCharsets.UTF_8)));
    }

    /** UTF-8 byte order is code point order (String.compareTo is UTF-16 order, which differs for astral characters). */
    static int byteOrder(String a, String b) {
        int i = 0, j = 0;
        while (i < a.length() && j < b.length()) {
            int x = a.codePointAt(i), y = b.codePointAt(j);
            if (x != y) return Integer.compare(x, y);
            i += Character.charCount(x);
            j += Character.charCount(y);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    }

    private static byte[] hmac(String secret, byte[] message) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            return mac.doFinal(message);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
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
        body.put("signature", sign(body, apiSecret));
        return body;
    }

    /**
     * POST {base_url}/merchant/{operation}, signed; answers the envelope {code, msg, time, data} as it
     * came. Throws MerchantError (code 0) only when no envelope came back (network failure, not JSON):
     * for a create, retry with the same merchant_order_no / merchant_refund_no, which is safe.
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
        if (!(code instanceof Number) || ((Number) code).doubleValue() != 1) {
            int c = code instanceof Number ? ((Number) code).intValue() : 0;
            Object status = envelope.get("_http_status");
            throw new MerchantError(c, String.valueOf(envelope.get("msg")), envelope.get("data"), status instanceof Integer ? (Integer) status : null);
        }
        return envelope.get("data");
    }

    /** Any operation by name (a new one works before this file knows it): its data, or MerchantError. */
    public Object call(String operation, Map<String, ?> params) {
        return dataOf(request(operation, params));
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> callForMap(String operation, Map<String, ?> params) {
        return (Map<String, Object>) call(operation, params);
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

    /** A top-up order (amounts as text, "100.00"); optional: customer_name, merchant_order_no, notify_url. */
    public Map<String, Object> createOrder(String cnyAmount, long paychannelId, String paychannelPaymethod, Map<String, ?> optional) {
        return callForMap("createOrder", with(params("order_type", 1, "cny_amount", cnyAmount, "paychannel_id", paychannelId, "paychannel_paymethod", paychannelPaymethod), optional));
    }

    /** filters: page, limit, status, order_type, start_time, end_time. Answers {list, total}, newest first. */
    public Map<String, Object> orderQueryList(Map<String, ?> filters) {
        return callForMap("orderQueryList", filters);
    }

    /** By order_no or merchant_order_no (pass null for the other). */
    public Map<String, Object> orderQueryDetail(String orderNo, String merchantOrderNo) {
        return callForMap("orderQueryDetail", params("order_no", orderNo, "merchant_order_no", merchantOrderNo));
    }

    /** category: processor, remotepay, warehouse, or null for all. */
    public Map<String, Object> getPayChannels(String category) {
        return callForMap("getPayChannels", params("category", category));
    }

    // -- money out (SPEC 6) ----------------------------------------------------------------------

    public Map<String, Object> orderClose(String orderNo) {
        return callForMap("orderClose", params("order_no", orderNo));
    }

    /** Refund a completed order, wholly or in part; the same merchantRefundNo makes a retry safe. optional: reason, notify_url. */
    public Map<String, Object> refundCreate(String orderNo, String refundAmount, String merchantRefundNo, Map<String, ?> optional) {
        return callForMap("refundCreate", with(params("order_no", orderNo, "refund_amount", refundAmount, "merchant_refund_no", merchantRefundNo), optional));
    }

    /** By refund_no or merchant_refund_no (pass null for the other). */
    public Map<String, Object> refundQuery(String refundNo, String merchantRefundNo) {
        return callForMap("refundQuery", params("refund_no", refundNo, "merchant_refund_no", merchantRefundNo));
    }

    public Map<String, Object> refundQueryList(String orderNo) {
        return callForMap("refundQueryList", params("order_no", orderNo));
    }

    /** A payout to your customer from your balance; optional: merchant_order_no, notify_url. */
    public Map<String, Object> createSellOrder(String cnyAmount, long paychannelId, String payeeName, String payeeAccount, String payeeBank, Map<String, ?> optional) {
        return callForMap("createSellOrder", with(params("cny_amount", cnyAmount, "paychannel_id", paychannelId, "payee_name", payeeName, "payee_account", payeeAccount, "payee_bank", payeeBank), optional));
    }

    /** The day's statement (date YYYY-MM-DD, Asia/Shanghai): opening, movements, closing. */
    public Map<String, Object> statementQuery(String date) {
        return callForMap("statementQuery", params("date", date));
    }

    // -- callback tools (SPEC 7) -----------------------------------------------------------------

    public Map<String, Object> callbackResend(String orderNo) {
        return callForMap("callbackResend", params("order_no", orderNo));
    }

    public Map<String, Object> callbackQueryList(String orderNo) {
        return callForMap("callbackQueryList", params("order_no", orderNo));
    }

    /** endTime may be null (now). */
    public Map<String, Object> callbackRecover(long startTime, Long endTime) {
        return callForMap("callbackRecover", params("start_time", startTime, "end_time", endTime));
    }

    /** url may be null (your notify URL). */
    public Map<String, Object> callbackTest(String url) {
        return callForMap("callbackTest", params("url", url));
    }

    // -- callbacks we receive --------------------------------------------------------------------

    /** The body's `signature` (signed like a request), its api_key ours, its timestamp fresh. */
    public boolean verifyCallbackBody(Map<String, ?> body) {
        Object signature = body.get("signature");
        if (!(signature instanceof String) || !apiKey.equals(body.get("api_key")) || !fresh(body.get("timestamp"))) return false;
        byte[] given = ((String) signature).toLowerCase(Locale.ROOT).getBytes(StandardCharsets.UTF_8);
        for (String secret : secrets) {
            if (MessageDigest.isEqual(sign(body, secret).getBytes(StandardCharsets.UTF_8), given)) return true;
        }
        return false;
    }

    /**
     * Standard Webhooks: webhook-signature holds `v1,<base64 HMAC-SHA256 of id.timestamp.body>` entries
     * (two during a rotation's grace); any entry with any of our secrets passes. rawBody: the exact
     * bytes received. Header names in any case.
     */
    public boolean verifyCallbackHeaders(Map<String, String> headers, byte[] rawBody) {
        Map<String, String> h = new LinkedHashMap<>();
        headers.forEach((k, v) -> h.put(k.toLowerCase(Locale.ROOT), v));
        String id = h.get("webhook-id"), timestamp = h.get("webhook-timestamp"), signatures = h.get("webhook-signature");
        if (id == null || id.isEmpty() || timestamp == null || signatures == null || !fresh(timestamp)) return false;
        byte[] prefix = (id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8);
        byte[] signed = new byte[prefix.length + rawBody.length];
        System.arraycopy(prefix, 0, signed, 0, prefix.length);
        System.arraycopy(rawBody, 0, signed, prefix.length, rawBody.length);
        for (String secret : secrets) {
            byte[] expected = Base64.getEncoder().encodeToString(hmac(secret, signed)).getBytes(StandardCharsets.UTF_8);
            for (String entry : signatures.split(" ")) {
                int comma = entry.indexOf(',');
                if (comma > 0 && entry.substring(0, comma).equals("v1")
                    && MessageDigest.isEqual(expected, entry.substring(comma + 1).getBytes(StandardCharsets.UTF_8))) return true;
            }
        }
        return false;
    }

    /** Both checks on a received callback: its parsed body, or null when either fails. */
    @SuppressWarnings("unchecked")
    public Map<String, Object> verifyCallback(Map<String, String> headers, byte[] rawBody) {
        Object body;
        try {
            body = Json.parse(new String(rawBody, StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            return null;
        }
        if (!(body instanceof Map) || !verifyCallbackHeaders(headers, rawBody) || !verifyCallbackBody((Map<String, Object>) body)) return null;
        return (Map<String, Object>) body;
    }

    private static boolean fresh(Object timestamp) {
        long ts;
        if (timestamp instanceof Long || timestamp instanceof Integer) ts = ((Number) timestamp).longValue();
        else if (timestamp instanceof String && ((String) timestamp).matches("\\d{1,15}")) ts = Long.parseLong((String) timestamp);
        else return false;
        return Math.abs(System.currentTimeMillis() / 1000 - ts) <= CALLBACK_TOLERANCE_SECONDS;
    }

    // -- JSON ------------------------------------------------------------------------------------

    /** Just enough JSON: parse to Map/List/String/Long/Double/Boolean/null; write as JavaScript would. */
    public static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        public static Object parse(String text) {
            Json p = new Json(text);
            p.space();
            Object value = p.value();
            p.space();
            if (p.i != text.length()) throw p.error("trailing text");
            return value;
        }

        /** sorted: keys in byte order at every level (SPEC 3's canonical JSON); else in the map's order. */
        public static String write(Object value, boolean sorted) {
            StringBuilder out = new StringBuilder();
            write(value, sorted, out);
            return out.toString();
        }

        private static void write(Object value, boolean sorted, StringBuilder out) {
            if (value == null) out.append("null");
            else if (value instanceof String) string((String) value, out);
            else if (value instanceof Boolean) out.append(value);
            else if (value instanceof Number) out.append(jsNumber((Number) value));
            else if (value instanceof Map) {
                List<String> keys = new ArrayList<>();
                for (Object k : ((Map<?, ?>) value).keySet()) keys.add(String.valueOf(k));
                if (sorted) keys.sort(MerchantClient::byteOrder);
                out.append('{');
                for (int n = 0; n < keys.size(); n++) {
                    if (n > 0) out.append(',');
                    string(keys.get(n), out);
                    out.append(':');
                    write(((Map<?, ?>) value).get(keys.get(n)), sorted, out);
                }
                out.append('}');
            } else if (value instanceof List) {
                out.append('[');
                List<?> list = (List<?>) value;
                for (int n = 0; n < list.size(); n++) {
                    if (n > 0) out.append(',');
                    write(list.get(n), sorted, out);
                }
                out.append(']');
            } else throw new IllegalArgumentException("cannot write a " + value.getClass().getName() + " as JSON");
        }

        /** As JSON.stringify: only quote, backslash and control characters (and lone surrogates) escaped. */
        private static void string(String text, StringBuilder out) {
            out.append('"');
            for (int n = 0; n < text.length(); n++) {
                char c = text.charAt(n);
                switch (c) {
                    case '"' -> out.append("\\\"");
                    case '\\' -> out.append("\\\\");
                    case '\b' -> out.append("\\b");
                    case '\f' -> out.append("\\f");
                    case '\n' -> out.append("\\n");
                    case '\r' -> out.append("\\r");
                    case '\t' -> out.append("\\t");
                    default -> {
                        boolean lone = Character.isHighSurrogate(c) ? !(n + 1 < text.length() && Character.isLowSurrogate(text.charAt(n + 1)))
                            : Character.isLowSurrogate(c) && !(n > 0 && Character.isHighSurrogate(text.charAt(n - 1)));
                        if (c < 0x20 || lone) out.append(String.format("\\u%04x", (int) c));
                        else out.append(c);
                    }
                }
            }
            out.append('"');
        }

        /** A number as JavaScript's String(number) writes it (the service signs what it parsed). */
        public static String jsNumber(Number number) {
            if ((number instanceof Long || number instanceof Integer || number instanceof Short || number instanceof Byte)
                && Math.abs(number.longValue()) < (1L << 53)) return Long.toString(number.longValue());
            if (number instanceof BigInteger && ((BigInteger) number).abs().bitLength() <= 53) return number.toString();
            double value = number.doubleValue();
            if (Double.isNaN(value) || Double.isInfinite(value)) throw new IllegalArgumentException("NaN and Infinity are not JSON");
            if (value == 0) return "0";
            String sign = value < 0 ? "-" : "";
            BigDecimal exact = new BigDecimal(Math.abs(value));
            BigDecimal shortest = exact;
            // The shortest digits that read back as the same double, as JavaScript picks them.
            for (int precision = 1; precision <= 17; precision++) {
                shortest = exact.round(new MathContext(precision, RoundingMode.HALF_EVEN));
                if (shortest.doubleValue() == Math.abs(value)) break;
            }
            shortest = shortest.stripTrailingZeros();
            String digits = shortest.unscaledValue().toString();
            int k = digits.length();
            int n = k - shortest.scale(); // value = 0.digits x 10^n
            if (k <= n && n <= 21) return sign + digits + "0".repeat(n - k);
            if (0 < n && n <= 21) return sign + digits.substring(0, n) + "." + digits.substring(n);
            if (-6 < n && n <= 0) return sign + "0." + "0".repeat(-n) + digits;
            int e = n - 1;
            String mantissa = k == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
            return sign + mantissa + "e" + (e >= 0 ? "+" : "-") + Math.abs(e);
        }

        private IllegalArgumentException error(String what) {
            return new IllegalArgumentException("JSON: " + what + " at " + i);
        }

        private void space() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) i++;
        }

        private Object value() {
            if (i >= s.length()) throw error("unexpected end");
            char c = s.charAt(i);
            if (c == '{') {
                Map<String, Object> map = new LinkedHashMap<>();
                i++;
                space();
                if (peek('}')) return map;
                do {
                    space();
                    if (i >= s.length() || s.charAt(i) != '"') throw error("expected a key");
                    String key = string();
                    space();
                    expect(':');
                    space();
                    map.put(key, value());
                    space();
                } while (peek(','));
                expect('}');
                return map;
            }
            if (c == '[') {
                List<Object> list = new ArrayList<>();
                i++;
                space();
                if (peek(']')) return list;
                do {
                    space();
                    list.add(value());
                    space();
                } while (peek(','));
                expect(']');
                return list;
            }
            if (c == '"') return string();
            if (s.startsWith("true", i)) { i += 4; return Boolean.TRUE; }
            if (s.startsWith("false", i)) { i += 5; return Boolean.FALSE; }
            if (s.startsWith("null", i)) { i += 4; return null; }
            int start = i;
            if (peek('-')) { /* sign */ }
            while (i < s.length() && "0123456789.eE+-".indexOf(s.charAt(i)) >= 0) i++;
            String literal = s.substring(start, i);
            if (!literal.matches("-?(0|[1-9]\\d*)(\\.\\d+)?([eE][+-]?\\d+)?")) throw error("bad number '" + literal + "'");
            if (literal.matches("-?\\d{1,18}")) return Long.parseLong(literal);
            return Double.parseDouble(literal);
        }

        private boolean peek(char c) {
            if (i < s.length() && s.charAt(i) == c) {
                i++;
                return true;
            }
            return false;
        }

        private void expect(char c) {
            if (!peek(c)) throw error("expected '" + c + "'");
        }

        private String string() {
            StringBuilder out = new StringBuilder();
            i++;
            while (true) {
                if (i >= s.length()) throw error("unterminated string");
                char c = s.charAt(i++);
                if (c == '"') return out.toString();
                if (c < 0x20) throw error("control character in string");
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                if (i >= s.length()) throw error("unterminated escape");
                char e = s.charAt(i++);
                switch (e) {
                    case '"', '\\', '/' -> out.append(e);
                    case 'b' -> out.append('\b');
                    case 'f' -> out.append('\f');
                    case 'n' -> out.append('\n');
                    case 'r' -> out.append('\r');
                    case 't' -> out.append('\t');
                    case 'u' -> {
                        if (i + 4 > s.length()) throw error("bad \\u escape");
                        try {
                            out.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        } catch (NumberFormatException x) {
                            throw error("bad \\u escape");
                        }
                        i += 4;
                    }
                    default -> throw error("bad escape");
                }
            }
        }
    }

    // -- command line ----------------------------------------------------------------------------

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        String base = System.getenv().getOrDefault("MERCHANT_BASE_URL", "http://127.0.0.1:3000/api");
        String previous = System.getenv("MERCHANT_API_SECRET_PREVIOUS");
        MerchantClient client = new MerchantClient(base, System.getenv().getOrDefault("MERCHANT_API_KEY", ""),
            System.getenv().getOrDefault("MERCHANT_API_SECRET", ""), previous == null || previous.isEmpty() ? null : previous, Duration.ofSeconds(15));
        String command = args.length > 0 ? args[0] : "";
        int status;
        try {
            if (client.apiSecret.isEmpty() && !command.isEmpty()) {
                System.err.println("MERCHANT_API_SECRET is not set");
                status = 2;
            } else if (command.equals("sign") && args.length == 2) {
                System.out.println(sign(jsonObject(args[1], "the parameters"), client.apiSecret));
                status = 0;
            } else if (command.equals("call") && (args.length == 2 || args.length == 3)) {
                Map<String, Object> envelope = client.request(args[1], args.length == 3 ? jsonObject(args[2], "the parameters") : Map.of());
                Map<String, Object> printed = new LinkedHashMap<>(envelope);
                printed.remove("_http_status");
                printOneLine(Json.write(printed, false));
                dataOf(envelope);
                status = 0;
            } else if (command.equals("verify") && args.length == 2) {
                byte[] raw = System.in.readAllBytes();
                Map<String, String> headers = new LinkedHashMap<>();
                jsonObject(args[1], "the headers").forEach((k, v) -> headers.put(k, v == null ? null : String.valueOf(v)));
                Object body;
                try {
                    body = Json.parse(new String(raw, StandardCharsets.UTF_8));
                } catch (IllegalArgumentException e) {
                    body = null;
                }
                boolean okBody = body instanceof Map && client.verifyCallbackBody((Map<String, Object>) body);
                boolean okHeaders = client.verifyCallbackHeaders(headers, raw);
                printOneLine("{\"body_signature\":" + okBody + ",\"webhook_signature\":" + okHeaders + "}");
                status = okBody && okHeaders ? 0 : 1;
            } else if (command.equals("demo") && args.length == 1) {
                status = client.demo(Integer.parseInt(System.getenv().getOrDefault("DEMO_CALLBACK_PORT", "4000")), System.getenv().getOrDefault("DEMO_AMOUNT", "100.00"));
            } else {
                System.err.println("usage: java MerchantClient.java call OPERATION '{json}' | sign '{json}' | verify 'HEADERS_JSON' < body | demo");
                status = 2;
            }
        } catch (MerchantError e) {
            System.err.println(e.getMessage());
            status = 1;
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            status = 2;
        }
        System.exit(status);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> jsonObject(String text, String what) {
        Object value = Json.parse(text);
        if (!(value instanceof Map)) throw new IllegalArgumentException(what + " must be a JSON object");
        return (Map<String, Object>) value;
    }

    private static void printOneLine(String text) {
        System.out.write(text.getBytes(StandardCharsets.UTF_8), 0, text.getBytes(StandardCharsets.UTF_8).length);
        System.out.println();
        System.out.flush();
    }

    /**
     * Create an order whose notify_url is a receiver on port, print its pay_url, then print each
     * callback with both signatures checked until order.completed (or order.cancelled).
     */
    @SuppressWarnings("unchecked")
    private int demo(int port, String amount) throws IOException, InterruptedException {
        CountDownLatch finished = new CountDownLatch(1);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
        server.createContext("/", exchange -> {
            byte[] raw = exchange.getRequestBody().readAllBytes();
            Map<String, String> headers = new LinkedHashMap<>();
            exchange.getRequestHeaders().forEach((k, v) -> headers.put(k, v.isEmpty() ? "" : v.get(0)));
            Map<String, Object> body = Map.of();
            try {
                Object parsed = Json.parse(new String(raw, StandardCharsets.UTF_8));
                if (parsed instanceof Map) body = (Map<String, Object>) parsed;
            } catch (IllegalArgumentException e) {
                // not JSON: both checks fail below
            }
            boolean okBody = verifyCallbackBody(body), okHeaders = verifyCallbackHeaders(headers, raw);
            synchronized (System.out) {
                printOneLine("callback " + body.get("event") + " order " + body.get("order_no") + " status " + body.get("status")
                    + " body-signature " + (okBody ? "valid" : "INVALID") + " webhook-signature " + (okHeaders ? "valid" : "INVALID"));
            }
            byte[] answer = (okBody && okHeaders ? "success" : "bad signature").getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(okBody && okHeaders ? 200 : 400, answer.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(answer);
            }
            if (okBody && okHeaders && ("order.completed".equals(body.get("event")) || "order.cancelled".equals(body.get("event")))) finished.countDown();
        });
        server.start();
        try {
            List<Map<String, Object>> channels = (List<Map<String, Object>>) getPayChannels(null).get("list");
            if (channels.isEmpty()) throw new MerchantError(0, "no payment channel is linked to this merchant", null, null);
            List<String> names = new ArrayList<>();
            for (Map<String, Object> c : channels) names.add(c.get("id") + " " + c.get("name") + " (" + c.get("pay_method") + ")");
            printOneLine("channels: " + String.join("; ", names));
            Map<String, Object> channel = channels.get(0);
            Map<String, Object> order = createOrder(amount, ((Number) channel.get("id")).longValue(), ((String) channel.get("pay_method")).split(",")[0],
                params("customer_name", "Demo customer", "notify_url", "http://127.0.0.1:" + port + "/callback"));
            printOneLine("order " + order.get("order_no") + " is " + order.get("status") + "; open this to pay:");
            printOneLine("pay_url " + order.get("pay_url"));
            printOneLine("waiting for callbacks on http://127.0.0.1:" + port + "/callback ...");
            finished.await();
            return 0;
        } catch (MerchantError e) {
            System.err.println(e.getMessage() + " (data " + Json.write(e.data, false) + ")");
            return 1;
        } finally {
            server.stop(0);
        }
    }
}
