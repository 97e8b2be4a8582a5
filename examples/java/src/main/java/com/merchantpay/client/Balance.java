package com.merchantpay.client;

/** balanceQuery's answer (SPEC 6): your balances now, in fen, as of asOf (Unix seconds). */
public record Balance(long availableFen, long depositFen, long asOf) {
    static Balance from(Fields f) {
        return new Balance(f.whole("available_fen"), f.whole("deposit_fen"), f.whole("as_of"));
    }
}
