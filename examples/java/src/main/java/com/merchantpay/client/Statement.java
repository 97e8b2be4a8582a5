package com.merchantpay.client;

import java.util.List;

/** statementQuery's answer: one Asia/Shanghai day of your balance, in fen; the movements sum to closing - opening. */
public record Statement(String date, String timezone, Balances openingBalance, Balances closingBalance, List<Movement> movements, long total) {
    public record Balances(long availableFen, long depositFen) {
        static Balances from(Fields f) {
            return new Balances(f.whole("available_fen"), f.whole("deposit_fen"));
        }
    }

    /** One ledger movement; account is "available" or "deposit"; refundNo null unless a refund moved it. */
    public record Movement(
        String entryId,
        long time,
        String kind,
        String account,
        long amountFen,
        String orderNo,
        String merchantOrderNo,
        String refundNo,
        long availableAfterFen,
        long depositAfterFen) {
        static Movement from(Fields f) {
            return new Movement(f.str("entry_id"), f.whole("time"), f.str("kind"), f.str("account"), f.whole("amount_fen"), f.str("order_no"),
                f.str("merchant_order_no"), f.str("refund_no"), f.whole("available_after_fen"), f.whole("deposit_after_fen"));
        }
    }

    static Statement from(Fields f) {
        return new Statement(f.str("date"), f.str("timezone"), Balances.from(f.object("opening_balance")), Balances.from(f.object("closing_balance")),
            f.list("movements", Movement::from), f.whole("total"));
    }
}
