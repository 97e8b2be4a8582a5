package com.merchantpay.client;

/** Any answer whose code is not 1 (SPEC 2), or no envelope at all (code 0: network, not JSON). */
public final class MerchantError extends RuntimeException {
    private static final long serialVersionUID = 1L;
    public final int code;
    public final String msg;
    /** The answer's data: details such as validation errors, or null. */
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
