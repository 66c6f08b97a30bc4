package io.github.idemtx.jooq.internal.store;

/**
 * The state of a claim row, the one place its codes are written. The {@code state} column holds
 * {@link #code()}; a row recorded in a caller's transaction holds the negated code until that
 * transaction commits (the V3 trigger counts its expiry from the commit), which {@link #of} reads
 * back as the same state.
 */
public enum ClaimState {
    /** A claim whose work is still running; written only by V1's function (rolling upgrades). */
    RUNNING(0),
    /** Completed; the result column holds the encoded value, or null for a null value. */
    SUCCEEDED(1),
    /** Failed deterministically; the result column holds the encoded failure. */
    FAILED(2),
    /** An external effect's claim committed before its remote call; never expires by time. */
    IN_FLIGHT(3),
    /** Every lookup of an effect's schedule went unanswered: an operator must record the outcome. */
    NEEDS_RECONCILIATION(4),
    /**
     * An effect settled by statement, sent (or about to be): its outcome is read from the remote's
     * statement, never decided by time; a claim still {@link #IN_FLIGHT} of such an effect was never sent.
     */
    SENT(5);

    private static final ClaimState[] BY_CODE = values();

    private final short code;

    ClaimState(int code) {
        this.code = (short) code;
    }

    /** {@return the value of the state column} */
    public short code() {
        return code;
    }

    /** {@return the value of the state column for a row recorded in a caller's open transaction} */
    public short joinedCode() {
        return (short) -code;
    }

    /**
     * {@return the state of a state column's value, a joined row's negated one included}
     *
     * @throws IllegalStateException for a value no version of the schema writes
     */
    public static ClaimState of(short column) {
        int code = Math.abs(column);
        if (code >= BY_CODE.length) {
            throw new IllegalStateException("a claim row has state " + column + ", which this version does not know;"
                    + " a newer version of the library wrote it");
        }
        return BY_CODE[code];
    }
}
