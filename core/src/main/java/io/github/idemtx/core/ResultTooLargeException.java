package io.github.idemtx.core;

/**
 * The work's encoded result was larger than {@link IdempotencyPolicy#maxResultBytes()}. The whole
 * call was rolled back: nothing of the work and no claim was committed, so the key is free again.
 */
public final class ResultTooLargeException extends IdempotencyException {

    private static final long serialVersionUID = 1L;

    private final int size;
    private final int limit;

    public ResultTooLargeException(Scope scope, IdempotencyKey key, int size, int limit) {
        super(scope, key, "encoded result is " + size + " bytes, over the limit of " + limit
                + " bytes (IdempotencyPolicy.maxResultBytes); nothing was committed", null);
        this.size = size;
        this.limit = limit;
    }

    /** The size of the encoded result, in bytes. */
    public int size() {
        return size;
    }

    /** The limit it exceeded, in bytes. */
    public int limit() {
        return limit;
    }
}
