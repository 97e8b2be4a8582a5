package com.merchantpay.client;

import java.math.BigDecimal;

/**
 * The two units of the API, never a double: yuan as {@code BigDecimal} with two places
 * ({@code cnyAmount}, {@code merchantAmount}, {@code refundAmount}) and fen as {@code long}
 * (every name ending in {@code Fen}). 1 yuan = 100 fen.
 */
public final class Money {
    private Money() {}

    /**
     * Yuan as the service takes it, text with two places: 100 becomes "100.00". Refuses a third
     * decimal place (never rounded away), zero and negative amounts.
     */
    public static String yuanText(BigDecimal yuan) {
        if (yuan == null) throw new IllegalArgumentException("an amount in yuan is required");
        if (yuan.stripTrailingZeros().scale() > 2) throw new IllegalArgumentException(yuan.toPlainString() + " has more than two decimal places: yuan are counted to the fen");
        if (yuan.signum() <= 0) throw new IllegalArgumentException(yuan.toPlainString() + " is not greater than 0");
        return yuan.setScale(2).toPlainString();
    }

    /** Fen to yuan: 9940 becomes 99.40. */
    public static BigDecimal yuan(long fen) {
        return BigDecimal.valueOf(fen, 2);
    }

    /** Yuan to fen: 99.40 becomes 9940; a third decimal place is an error. */
    public static long fen(BigDecimal yuan) {
        return yuan.movePointRight(2).longValueExact();
    }
}
