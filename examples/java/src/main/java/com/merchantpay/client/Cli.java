package com.merchantpay.client;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/**
 * The client as a command, the same as the PHP and Python clients' (env MERCHANT_BASE_URL,
 * MERCHANT_API_KEY, MERCHANT_API_SECRET, and during a rotation's grace MERCHANT_API_SECRET_PREVIOUS):
 *
 * <pre>
 *   java -jar merchant-pay-client.jar call OPERATION '{"json":"params"}'    the answer's JSON on one line
 *   java -jar merchant-pay-client.jar typed OPERATION '{"json":"params"}'   the typed answer (its record)
 *   java -jar merchant-pay-client.jar sign '{"json":"params"}'              the signature of those parameters
 *   java -jar merchant-pay-client.jar verify 'HEADERS_JSON' &lt; raw_body       checks a received callback
 *   java -jar merchant-pay-client.jar demo                                   create an order, wait for its callbacks
 * </pre>
 */
public final class Cli {
    private static final String USAGE = "usage: merchant-pay-client call OPERATION '{json}' | typed OPERATION '{json}' | sign '{json}' | verify 'HEADERS_JSON' < body | demo";

    private Cli() {}

    /** A wrong invocation: exit 2 with this line. */
    private static final class Usage extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Usage(String message) {
            super(message);
        }
    }

    public static void main(String[] args) {
        int status;
        try {
            status = run(args);
        } catch (MerchantError e) {
            System.err.println(e.getMessage());
            status = 1;
        } catch (Usage | IllegalArgumentException | ArithmeticException e) {
            System.err.println(e.getMessage());
            status = 2;
        } catch (IOException | InterruptedException e) {
            System.err.println(e);
            status = 1;
        }
        System.exit(status);
    }

    private static String env(String name) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            throw new Usage(name + " is not set" + (name.equals("MERCHANT_BASE_URL") ? " (your {base_url}, e.g. http://127.0.0.1:3000/api)" : ""));
        }
        return value;
    }

    private static MerchantClient client() {
        return new MerchantClient(env("MERCHANT_BASE_URL"), env("MERCHANT_API_KEY"), env("MERCHANT_API_SECRET"), System.getenv("MERCHANT_API_SECRET_PREVIOUS"),
            Duration.ofSeconds(15));
    }

    @SuppressWarnings("unchecked")
    static int run(String[] args) throws IOException, InterruptedException {
        String command = args.length > 0 ? args[0] : "";
        if (command.equals("sign") && args.length == 2) {
            printOneLine(Signing.sign(jsonObject(args[1], "the parameters"), env("MERCHANT_API_SECRET")));
            return 0;
        }
        if (command.equals("verify") && args.length == 2) {
            CallbackVerifier verifier = new CallbackVerifier(env("MERCHANT_API_KEY"), env("MERCHANT_API_SECRET"), System.getenv("MERCHANT_API_SECRET_PREVIOUS"));
            byte[] raw = System.in.readAllBytes();
            Map<String, String> headers = new LinkedHashMap<>();
            jsonObject(args[1], "the headers").forEach((k, v) -> headers.put(k, v == null ? null : String.valueOf(v)));
            Object body;
            try {
                body = Json.parse(new String(raw, StandardCharsets.UTF_8));
            } catch (IllegalArgumentException e) {
                body = null;
            }
            boolean okBody = body instanceof Map && verifier.bodyVerifies((Map<String, Object>) body);
            boolean okHeaders = verifier.headersVerify(headers, raw);
            printOneLine("{\"body_signature\":" + okBody + ",\"webhook_signature\":" + okHeaders + "}");
            return okBody && okHeaders ? 0 : 1;
        }
        if (command.equals("call") && (args.length == 2 || args.length == 3)) {
            MerchantClient client = client();
            Map<String, Object> envelope = client.request(args[1], args.length == 3 ? jsonObject(args[2], "the parameters") : Map.of());
            Map<String, Object> printed = new LinkedHashMap<>(envelope);
            printed.remove("_http_status");
            printOneLine(Json.write(printed, false));
            MerchantClient.dataOf(envelope);
            return 0;
        }
        if (command.equals("typed") && (args.length == 2 || args.length == 3)) {
            Map<String, Object> p = args.length == 3 ? jsonObject(args[2], "the parameters") : Map.of();
            printOneLine(String.valueOf(typed(client(), args[1], p)));
            return 0;
        }
        if (command.equals("demo") && args.length == 1) {
            String port = System.getenv("DEMO_CALLBACK_PORT");
            String amount = System.getenv("DEMO_AMOUNT");
            return demo(client(), port == null ? 4000 : Integer.parseInt(port), new BigDecimal(amount == null ? "100.00" : amount));
        }
        throw new Usage(USAGE);
    }

    /** The typed method of an operation, its parameters by the operation's own names. */
    private static Object typed(MerchantClient c, String operation, Map<String, Object> p) {
        return switch (operation) {
            case "createOrder" -> c.createOrder(yuan(p, "cny_amount"), whole(p, "paychannel_id"), (String) p.get("paychannel_paymethod"),
                without(p, "order_type", "cny_amount", "paychannel_id", "paychannel_paymethod"));
            case "orderQueryList" -> c.orderQueryList(p);
            case "orderQueryDetail" -> c.orderQueryDetail((String) p.get("order_no"), (String) p.get("merchant_order_no"));
            case "getPayChannels" -> c.getPayChannels((String) p.get("category"));
            case "orderClose" -> c.orderClose((String) p.get("order_no"));
            case "refundCreate" -> c.refundCreate((String) p.get("order_no"), yuan(p, "refund_amount"), (String) p.get("merchant_refund_no"),
                without(p, "order_no", "refund_amount", "merchant_refund_no"));
            case "refundQuery" -> c.refundQuery((String) p.get("refund_no"), (String) p.get("merchant_refund_no"));
            case "refundQueryList" -> c.refundQueryList((String) p.get("order_no"));
            case "createSellOrder" -> c.createSellOrder(yuan(p, "cny_amount"), whole(p, "paychannel_id"), (String) p.get("payee_name"), (String) p.get("payee_account"),
                (String) p.get("payee_bank"), without(p, "cny_amount", "paychannel_id", "payee_name", "payee_account", "payee_bank"));
            case "statementQuery" -> c.statementQuery((String) p.get("date"));
            case "balanceQuery" -> c.balanceQuery();
            case "callbackResend" -> c.callbackResend((String) p.get("order_no"));
            case "callbackQueryList" -> c.callbackQueryList((String) p.get("order_no"));
            case "callbackRecover" -> c.callbackRecover(whole(p, "start_time"), p.get("end_time") == null ? null : whole(p, "end_time"));
            case "callbackTest" -> c.callbackTest((String) p.get("url"));
            default -> throw new Usage("typed: no typed method for " + operation + " (use call)");
        };
    }

    private static BigDecimal yuan(Map<String, Object> p, String key) {
        Object v = p.get(key);
        if (v == null) throw new Usage(key + " is required");
        return new BigDecimal(String.valueOf(v));
    }

    private static long whole(Map<String, Object> p, String key) {
        Object v = p.get(key);
        if (!(v instanceof Long)) throw new Usage(key + " must be a whole number");
        return (Long) v;
    }

    private static Map<String, Object> without(Map<String, Object> p, String... keys) {
        Map<String, Object> rest = new LinkedHashMap<>(p);
        for (String k : keys) rest.remove(k);
        return rest;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> jsonObject(String text, String what) {
        Object value;
        try {
            value = Json.parse(text);
        } catch (IllegalArgumentException e) {
            throw new Usage(what + " must be a JSON object (" + e.getMessage() + ")");
        }
        if (!(value instanceof Map)) throw new Usage(what + " must be a JSON object");
        return (Map<String, Object>) value;
    }

    private static void printOneLine(String text) {
        byte[] bytes = (text + "\n").getBytes(StandardCharsets.UTF_8);
        System.out.write(bytes, 0, bytes.length);
        System.out.flush();
    }

    /**
     * Create an order whose notify_url is a receiver on port, print its pay_url, then print each
     * callback with both signatures checked until order.completed (or order.cancelled).
     */
    @SuppressWarnings("unchecked")
    private static int demo(MerchantClient client, int port, BigDecimal amount) throws IOException, InterruptedException {
        CountDownLatch finished = new CountDownLatch(1);
        CallbackVerifier verifier = client.verifier();
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
            boolean okBody = verifier.bodyVerifies(body), okHeaders = verifier.headersVerify(headers, raw);
            Callback callback = client.verifyCallback(headers, raw);
            synchronized (System.out) {
                printOneLine("callback " + body.get("event") + " order " + body.get("order_no") + " status " + body.get("status")
                    + " body-signature " + (okBody ? "valid" : "INVALID") + " webhook-signature " + (okHeaders ? "valid" : "INVALID"));
            }
            byte[] answer = (callback != null ? "success" : "bad signature").getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(callback != null ? 200 : 400, answer.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(answer);
            }
            if (callback instanceof Callback.OrderEvent e && (e.event().equals("order.completed") || e.event().equals("order.cancelled"))) finished.countDown();
        });
        server.start();
        try {
            List<PayChannel> channels = client.getPayChannels(null).list();
            if (channels.isEmpty()) throw new MerchantError(0, "no payment channel is linked to this merchant", null, null);
            List<String> names = new ArrayList<>();
            for (PayChannel c : channels) names.add(c.id() + " " + c.name() + " (" + c.payMethod() + ")");
            printOneLine("channels: " + String.join("; ", names));
            PayChannel channel = channels.get(0);
            CreatedOrder order = client.createOrder(amount, channel.id(), channel.payMethods().get(0),
                Map.of("customer_name", "Demo customer", "notify_url", "http://127.0.0.1:" + port + "/callback"));
            printOneLine("order " + order.orderNo() + " is " + order.status() + "; open this to pay:");
            printOneLine("pay_url " + order.payUrl());
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
