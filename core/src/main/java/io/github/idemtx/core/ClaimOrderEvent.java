package io.github.idemtx.core;

import java.util.Locale;

/**
 * An {@code IdempotentTransaction} in the opt-in adaptive claim mode changed the order of its calls'
 * claim and work: to claiming the key first, because the share of recent calls that found
 * their key taken (retries of completed calls, concurrent duplicates) passed the break-even by a
 * third, or back to running the work first, because that share fell a third under it. A final class rather than a
 * record, so that it can gain what a later version reports without breaking a listener.
 */
public final class ClaimOrderEvent {

    private final boolean claimFirst;
    private final double takenShare;
    private final double breakEven;

    private ClaimOrderEvent(boolean claimFirst, double takenShare, double breakEven) {
        this.claimFirst = claimFirst;
        this.takenShare = takenShare;
        this.breakEven = breakEven;
    }

    /**
     * {@return a change to claiming the key first}
     *
     * @param takenShare the share of recent calls that found their key taken, from 0 to 1
     * @param breakEven the share above which claiming first costs less, from 0 to 1
     * @throws IllegalArgumentException if a share is not between 0 and 1
     */
    public static ClaimOrderEvent toClaimFirst(double takenShare, double breakEven) {
        return new ClaimOrderEvent(true, share("takenShare", takenShare), share("breakEven", breakEven));
    }

    /**
     * {@return a change to claiming the key first}
     *
     * @param takenShare the share of recent calls that found their key taken, from 0 to 1
     * @param breakEven the share above which claiming first costs less, from 0 to 1
     * @throws IllegalArgumentException if a share is not between 0 and 1
     * @deprecated since 1.0, renamed {@link #toClaimFirst}; it will be removed in 2.0
     */
    @Deprecated(since = "1.0", forRemoval = true)
    @SuppressWarnings("InlineMeSuggester") // core takes no annotation dependency for it
    public static ClaimOrderEvent toReadFirst(double takenShare, double breakEven) {
        return toClaimFirst(takenShare, breakEven);
    }

    /**
     * {@return a change back to running the work first}
     *
     * @param takenShare the share of recent calls that found their key taken, from 0 to 1
     * @param breakEven the share above which claiming first costs less, from 0 to 1
     * @throws IllegalArgumentException if a share is not between 0 and 1
     */
    public static ClaimOrderEvent toWorkFirst(double takenShare, double breakEven) {
        return new ClaimOrderEvent(false, share("takenShare", takenShare), share("breakEven", breakEven));
    }

    private static double share(String name, double value) {
        if (!(value >= 0 && value <= 1)) {
            throw new IllegalArgumentException(name + " is a share from 0 to 1, was " + value);
        }
        return value;
    }

    /** {@return true when calls now claim the key first, false when the work goes first again} */
    public boolean claimFirst() {
        return claimFirst;
    }

    /**
     * {@return true when calls now claim the key first, false when the work goes first again}
     *
     * @deprecated since 1.0, renamed {@link #claimFirst()}; it will be removed in 2.0
     */
    @Deprecated(since = "1.0", forRemoval = true)
    public boolean readFirst() {
        return claimFirst;
    }

    /** {@return the share of recent calls that found their key taken, from 0 to 1} */
    public double takenShare() {
        return takenShare;
    }

    /**
     * {@return the share above which claiming first costs less, from 0 to 1}: from the measured times
     * of the work and of the claim's statement; the order claims first above it by a third and goes
     * back to work first a third under it
     */
    public double breakEven() {
        return breakEven;
    }

    @Override
    public String toString() {
        return String.format(
                Locale.ROOT,
                "ClaimOrderEvent[%s, takenShare=%.4f, breakEven=%.4f]",
                claimFirst ? "claim first" : "work first",
                takenShare,
                breakEven);
    }
}
