package com.merchantpay.client;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** Request signing exactly as the service checks it (SPEC 3), tested against the shared vectors. */
public final class Signing {
    private Signing() {}

    /** key=value of every parameter but `signature`, without null or "" values, sorted by key bytes, joined by &. */
    public static String canonicalString(Map<String, ?> params) {
        List<String> keys = new ArrayList<>();
        for (Map.Entry<String, ?> e : params.entrySet()) {
            Object v = e.getValue();
            if (!e.getKey().equals("signature") && v != null && !"".equals(v)) keys.add(e.getKey());
        }
        keys.sort(Signing::byteOrder);
        StringBuilder out = new StringBuilder();
        for (String key : keys) {
            if (out.length() > 0) out.append('&');
            Object v = params.get(key);
            out.append(key).append('=');
            if (v instanceof String) out.append((String) v);
            else if (v instanceof BigDecimal) out.append(((BigDecimal) v).toPlainString());
            else out.append(Json.write(v, true));
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

    static byte[] hmac(String secret, byte[] message) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            return mac.doFinal(message);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }
}
