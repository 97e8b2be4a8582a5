package com.merchantpay.client;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Checks a received callback both ways with every secret you hold.
 *
 * <p>During a secret rotation's grace (SPEC 3) {@code webhook-signature} carries an entry per
 * secret and the body's {@code signature} is made with one of them (the previous secret until the
 * grace ends): a callback passes when each check matches ANY of the secrets. So a receiver that
 * still holds only the old secret keeps accepting while you deploy the new one, and one holding
 * both accepts either.
 */
public final class CallbackVerifier {
    /** A callback whose timestamp is further than this from now is refused (replays of old callbacks). */
    public static final long TOLERANCE_SECONDS = 300;

    private final String apiKey;
    private final List<String> secrets = new ArrayList<>();

    /** secrets: the current api_secret and, during a rotation's grace, the previous one (nulls and empties ignored). */
    public CallbackVerifier(String apiKey, String... secrets) {
        this.apiKey = apiKey;
        for (String s : secrets) if (s != null && !s.isEmpty()) this.secrets.add(s);
        if (this.secrets.isEmpty()) throw new IllegalArgumentException("CallbackVerifier needs at least one api_secret");
    }

    /** The body's `signature` (signed like a request) with any secret, its api_key ours, its timestamp fresh. */
    public boolean bodyVerifies(Map<String, ?> body) {
        Object signature = body.get("signature");
        if (!(signature instanceof String) || !apiKey.equals(body.get("api_key")) || !fresh(body.get("timestamp"))) return false;
        byte[] given = ((String) signature).toLowerCase(Locale.ROOT).getBytes(StandardCharsets.UTF_8);
        for (String secret : secrets) {
            if (MessageDigest.isEqual(Signing.sign(body, secret).getBytes(StandardCharsets.UTF_8), given)) return true;
        }
        return false;
    }

    /**
     * Standard Webhooks: any {@code v1,<base64 HMAC-SHA256 of id.timestamp.body>} entry with any
     * secret. rawBody: the exact bytes received. Header names in any case.
     */
    public boolean headersVerify(Map<String, String> headers, byte[] rawBody) {
        Map<String, String> h = new LinkedHashMap<>();
        headers.forEach((k, v) -> h.put(k.toLowerCase(Locale.ROOT), v));
        String id = h.get("webhook-id"), timestamp = h.get("webhook-timestamp"), signatures = h.get("webhook-signature");
        if (id == null || id.isEmpty() || timestamp == null || signatures == null || !fresh(timestamp)) return false;
        byte[] prefix = (id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8);
        byte[] signed = new byte[prefix.length + rawBody.length];
        System.arraycopy(prefix, 0, signed, 0, prefix.length);
        System.arraycopy(rawBody, 0, signed, prefix.length, rawBody.length);
        for (String secret : secrets) {
            byte[] expected = Base64.getEncoder().encodeToString(Signing.hmac(secret, signed)).getBytes(StandardCharsets.UTF_8);
            for (String entry : signatures.split(" ")) {
                int comma = entry.indexOf(',');
                if (comma > 0 && entry.substring(0, comma).equals("v1")
                    && MessageDigest.isEqual(expected, entry.substring(comma + 1).getBytes(StandardCharsets.UTF_8))) return true;
            }
        }
        return false;
    }

    /** Both checks: the typed event (switch over Callback's records), or null when either fails. */
    @SuppressWarnings("unchecked")
    public Callback verify(Map<String, String> headers, byte[] rawBody) {
        Object body;
        try {
            body = Json.parse(new String(rawBody, StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            return null;
        }
        if (!(body instanceof Map) || !headersVerify(headers, rawBody) || !bodyVerifies((Map<String, Object>) body)) return null;
        return Callback.from((Map<String, Object>) body);
    }

    private static boolean fresh(Object timestamp) {
        long ts;
        if (timestamp instanceof Long || timestamp instanceof Integer) ts = ((Number) timestamp).longValue();
        else if (timestamp instanceof String && ((String) timestamp).matches("\\d{1,15}")) ts = Long.parseLong((String) timestamp);
        else return false;
        return Math.abs(System.currentTimeMillis() / 1000 - ts) <= TOLERANCE_SECONDS;
    }
}
