package com.merchantpay.client;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Just enough JSON, so the client needs nothing beyond the JDK: parse to Map / List / String / Long /
 * Double / Boolean / null; write as JavaScript would (a BigDecimal as its text: amounts go as text).
 */
public final class Json {
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
        else if (value instanceof BigDecimal) string(((BigDecimal) value).toPlainString(), out);
        else if (value instanceof Boolean) out.append(value);
        else if (value instanceof Number) out.append(jsNumber((Number) value));
        else if (value instanceof Map) {
            List<String> keys = new ArrayList<>();
            for (Object k : ((Map<?, ?>) value).keySet()) keys.add(String.valueOf(k));
            if (sorted) keys.sort(Signing::byteOrder);
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
