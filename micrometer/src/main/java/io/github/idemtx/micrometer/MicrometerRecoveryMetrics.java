package io.github.idemtx.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The recovery passes of external effects as Micrometer meters: how each claim a pass took over
 * ended, per effect, and how long passes took. A scheduler reports each pass it ran
 * ({@link #passed}) or that threw ({@link #failed}); the counts are those of
 * {@code EffectRecovery.Pass#counts()}, keyed by each {@code EffectRecovery.Ending}'s {@code tag()}
 * (this module does not depend on the effect's module, so they arrive as a map of names).
 *
 * <table>
 *   <caption>meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th></tr>
 *   <tr><td>{@code idemtx.recovery.claims}</td><td>counter</td><td>effect, outcome: one of
 *       {@link #OUTCOMES} (found, refused, resent, unknown, reconciliation, lost_fence, failed,
 *       handed_back)</td></tr>
 *   <tr><td>{@code idemtx.recovery.pass}</td><td>timer</td><td>effect, outcome ({@code ok} or
 *       {@code failed}: the pass threw), exception (its simple class name, or {@code none})</td></tr>
 * </table>
 *
 * <p>Tags are bounded: effects are the application's few named effects, outcomes the library's. A
 * count under a name not in {@link #OUTCOMES} (a later version's) is counted under its own name.
 * Thread-safe.
 */
public final class MicrometerRecoveryMetrics {

    /** The counter of claims taken over by recovery passes, by effect and outcome. */
    public static final String CLAIMS = "idemtx.recovery.claims";

    /** The timer of recovery passes, by effect and outcome. */
    public static final String PASS = "idemtx.recovery.pass";

    /** How a claim taken over by a pass can end, in the order {@code EffectRecovery.Ending} names them. */
    public static final List<String> OUTCOMES =
            List.of("found", "refused", "resent", "unknown", "reconciliation", "lost_fence", "failed", "handed_back");

    private final MeterRegistry meters;

    private MicrometerRecoveryMetrics(MeterRegistry meters) {
        this.meters = meters;
    }

    /**
     * {@return metrics in {@code meters}}
     *
     * @param meters where the meters are registered
     * @throws NullPointerException if {@code meters} is null
     */
    public static MicrometerRecoveryMetrics of(MeterRegistry meters) {
        return new MicrometerRecoveryMetrics(Objects.requireNonNull(meters, "meters must not be null"));
    }

    /**
     * Registers the counters of every outcome and the pass timer of {@code effect} at zero, so that
     * dashboards and alerts see the effect before its first pass takes a claim over.
     *
     * @param effect the effect's name
     * @throws NullPointerException if {@code effect} is null
     */
    public void register(String effect) {
        Objects.requireNonNull(effect, "effect must not be null");
        for (String outcome : OUTCOMES) {
            claims(effect, outcome);
        }
        pass(effect, "ok", "none");
    }

    /**
     * Records one pass that returned.
     *
     * @param effect the effect's name
     * @param counts how many claims ended each way ({@code EffectRecovery.Pass#counts()} by
     *     {@code Ending.tag()}); ways absent are zero
     * @param took how long the pass ran
     * @throws NullPointerException if an argument, or a key or value of {@code counts}, is null
     * @throws IllegalArgumentException if a count is negative
     */
    public void passed(String effect, Map<String, Integer> counts, Duration took) {
        Objects.requireNonNull(effect, "effect must not be null");
        Objects.requireNonNull(counts, "counts must not be null");
        Objects.requireNonNull(took, "took must not be null");
        counts.forEach((outcome, count) -> {
            Objects.requireNonNull(outcome, "an outcome of counts must not be null");
            Objects.requireNonNull(count, "a count of counts must not be null");
            if (count < 0) {
                throw new IllegalArgumentException("the count of " + outcome + " must not be negative, was " + count);
            }
        });
        counts.forEach((outcome, count) -> claims(effect, outcome).increment(count));
        pass(effect, "ok", "none").record(took);
    }

    /**
     * Records one pass that threw (its claims are not counted: the pass did not say how they ended;
     * their leases end and a later pass takes them over).
     *
     * @param effect the effect's name
     * @param took how long the pass ran until it threw
     * @param exception what it threw
     * @throws NullPointerException if an argument is null
     */
    public void failed(String effect, Duration took, Throwable exception) {
        Objects.requireNonNull(effect, "effect must not be null");
        Objects.requireNonNull(took, "took must not be null");
        Objects.requireNonNull(exception, "exception must not be null");
        pass(effect, "failed", exception.getClass().getSimpleName()).record(took);
    }

    private Counter claims(String effect, String outcome) {
        return Counter.builder(CLAIMS)
                .description("claims of external effects taken over by recovery passes, by how they ended")
                .tags(Tags.of("effect", effect, "outcome", outcome))
                .register(meters);
    }

    private Timer pass(String effect, String outcome, String exception) {
        return Timer.builder(PASS)
                .description("recovery passes of external effects")
                .tags(Tags.of("effect", effect, "outcome", outcome, "exception", exception))
                .register(meters);
    }
}
