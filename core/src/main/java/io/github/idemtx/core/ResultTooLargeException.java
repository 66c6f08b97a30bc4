package io.github.idemtx.core;

/**
 * The work's encoded result was larger than {@link IdempotencyPolicy#maxResultBytes()}. The whole
 * call was rolled back: nothing of the work and no claim was committed, so the key is free again.
 */
public final class ResultTooLargeException extends IdempotencyException {

    private static final long serialVersionUID = 1L;

    /** The size of the encoded result, in bytes. */
    private final int size;
    /** The limit it exceeded, in bytes. */
    private final int limit;

    /**
     * Reports a result over the limit.
     *
     * @param scope the call's scope
     * @param key the call's key
     * @param size the size of the encoded result, in bytes
     * @param limit the limit it exceeded, in bytes
     */
    public ResultTooLargeException(Scope scope, IdempotencyKey key, int size, int limit) {
        super(
                scope,
                key,
                "encoded result is " + size + " bytes, over the limit of " + limit
                        + " bytes (IdempotencyPolicy.maxResultBytes); nothing was committed",
                null);
        this.size = size;
        this.limit = limit;
    }

    /** {@return the size of the encoded result, in bytes} */
    public int size() {
        return size;
    }

    /** {@return the limit it exceeded, in bytes} */
    public int limit() {
        return limit;
    }
}
