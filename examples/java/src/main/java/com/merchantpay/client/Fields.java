package com.merchantpay.client;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/** Reads an answer's JSON object into record fields: yuan text to BigDecimal, fen to long; unknown fields ignored (SPEC 9: additive). */
final class Fields {
    private final Map<String, ?> map;
    private final String what;

    private Fields(Map<String, ?> map, String what) {
        this.map = map;
        this.what = what;
    }

    @SuppressWarnings("unchecked")
    static Fields of(Object value, String what) {
        if (!(value instanceof Map)) throw new MerchantError(0, what + ": expected a JSON object, got " + Json.write(value, false), value, null);
        return new Fields((Map<String, ?>) value, what);
    }

    private Object present(String key) {
        Object v = map.get(key);
        if (v == null) throw new MerchantError(0, what + " has no " + key, map, null);
        return v;
    }

    String str(String key) {
        Object v = map.get(key);
        return v == null ? null : String.valueOf(v);
    }

    /** Yuan (or a rate): decimal text, exact. */
    BigDecimal decimal(String key) {
        Object v = map.get(key);
        return v == null ? null : new BigDecimal(String.valueOf(v));
    }

    long whole(String key) {
        Object v = present(key);
        if (v instanceof Long || v instanceof Integer) return ((Number) v).longValue();
        if (v instanceof String && ((String) v).matches("-?\\d{1,18}")) return Long.parseLong((String) v);
        throw new MerchantError(0, what + "." + key + " is not a whole number: " + v, map, null);
    }

    Long wholeOrNull(String key) {
        return map.get(key) == null ? null : whole(key);
    }

    Integer intOrNull(String key) {
        return map.get(key) == null ? null : Math.toIntExact(whole(key));
    }

    boolean bool(String key) {
        return Boolean.TRUE.equals(map.get(key));
    }

    Fields object(String key) {
        return of(present(key), what + "." + key);
    }

    <T> List<T> list(String key, Function<Fields, T> each) {
        Object v = map.get(key);
        List<T> out = new ArrayList<>();
        if (v == null) return out;
        if (!(v instanceof List)) throw new MerchantError(0, what + "." + key + " is not a list", map, null);
        for (Object item : (List<?>) v) out.add(each.apply(of(item, what + "." + key + "[]")));
        return List.copyOf(out);
    }

    Map<String, ?> raw() {
        return map;
    }
}
