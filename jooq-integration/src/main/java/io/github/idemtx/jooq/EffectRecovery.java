package io.github.idemtx.jooq;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.internal.flow.effect.EffectFlow;
import io.github.idemtx.jooq.internal.store.ClaimState;
import io.github.idemtx.jooq.internal.store.EffectStatements;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The recovery of one {@link ExternalEffect}'s claims whose outcome is unknown, from
 * {@link ExternalEffect#recovery()}: the pass that takes them over and settles them
 * ({@link #recover}), a schedule that runs it ({@link #schedule}), and what is unsettled now
 * ({@link #inFlight}, {@link #needingReconciliation}). A claim taken over is first looked up by its
 * downstream key ({@link Remote#lookup}): <b>found</b> is recorded; <b>absent</b> is sent again with
 * the same key only where the remote reads its own writes ({@link ExternalEffect.Builder#readAfterWrite});
 * <b>unknown</b> is looked up again on the effect's lookup schedule, after which the claim needs
 * reconciliation: an operator records what the remote did with {@link ClaimAdmin}.
 *
 * <pre>{@code
 * AutoCloseable recovering = charges.recovery().schedule(Duration.ofSeconds(10), 100, pass -> log(pass.counts()));
 * // ... on shutdown:
 * recovering.close();
 * }</pre>
 *
 * <p>Each method owns its transactions; inside a caller's transaction it is refused, as
 * {@link ExternalEffect#run} is. Instances are immutable and thread-safe: passes of one effect may
 * run side by side and beside live calls ({@code FOR UPDATE SKIP LOCKED} gives each claim to one).
 *
 * @param <R> the effect's request type, as the listings show it
 */
public final class EffectRecovery<R> {

    /** The most claims a pass takes over, or a listing shows: 10,000. */
    public static final int MAX_LIMIT = 10_000;

    /** The shortest pause between a schedule's passes: 1 millisecond. */
    public static final Duration SHORTEST_INTERVAL = Duration.ofMillis(1);

    /** The longest pause between a schedule's passes: 1 day. */
    public static final Duration LONGEST_INTERVAL = Duration.ofDays(1);

    private final String effect;
    private final EffectFlow<R, ?> flow;

    EffectRecovery(String effect, EffectFlow<R, ?> flow) {
        this.effect = effect;
        this.flow = flow;
    }

    /** {@return the name of the effect whose claims this recovers} */
    public String effect() {
        return effect;
    }

    /**
     * One recovery pass: takes over up to {@code limit} in-flight claims of this effect whose lease
     * has passed and whose next lookup is due ({@code FOR UPDATE SKIP LOCKED}, so passes and live
     * calls run side by side), and settles each as described above. Call it on a schedule, or use
     * {@link #schedule}.
     *
     * @param limit from 1 to {@value #MAX_LIMIT}
     * @return how the claims taken over ended
     * @throws IllegalArgumentException if {@code limit} is out of range
     * @throws org.jooq.exception.DataAccessException if the database fails while taking the claims
     *     over (a claim whose settling fails is counted {@link Ending#FAILED} instead)
     */
    public Pass recover(int limit) {
        return recover(limit, () -> false);
    }

    /**
     * One recovery pass, as {@link #recover(int)}, that a scheduler can stop: {@code stop} is asked
     * before each claim of the batch is settled, and once it answers true the claims not yet settled
     * are handed back at once (their lease ends, counted {@link Ending#HANDED_BACK}) for the next
     * recoverer. The claim being settled when it turns true is finished (its remote call ends within
     * the lease).
     *
     * @param limit from 1 to {@value #MAX_LIMIT}
     * @param stop asked before each claim; true stops the pass
     * @return how the claims taken over ended
     * @throws NullPointerException if {@code stop} is null
     * @throws IllegalArgumentException if {@code limit} is out of range
     */
    public Pass recover(int limit, BooleanSupplier stop) {
        Objects.requireNonNull(stop, "stop must not be null");
        checkLimit(limit);
        Map<Ending, Integer> counts = new EnumMap<>(Ending.class);
        for (EffectFlow.Settled s : flow.recover(limit, stop)) {
            counts.merge(Ending.of(s), 1, Integer::sum);
        }
        return new Pass(counts);
    }

    /**
     * Runs {@link #recover}{@code (limit)} every {@code every} on a daemon thread of its own, again
     * at once while a pass takes over {@code limit} claims (each claim it could not settle is counted
     * and due again only on the lookup schedule, so this catches up and never spins); a failed pass
     * is logged and tried again at the next tick. Close the returned handle to stop it: it waits only
     * for the claim being settled (a remote call ends within the lease), the rest of a running pass's
     * batch is handed back ({@link Ending#HANDED_BACK}) for the next recoverer.
     *
     * @param every from {@link #SHORTEST_INTERVAL} to {@link #LONGEST_INTERVAL}
     * @param limit claims per pass, from 1 to {@value #MAX_LIMIT}
     * @param onPass told of each pass that took any claim over (for logs and metrics), on the
     *     schedule's thread; may be null
     * @return the handle that stops the schedule; its {@code close()} waits up to a minute
     * @throws NullPointerException if {@code every} is null
     * @throws IllegalArgumentException if {@code every} or {@code limit} is out of range
     */
    public AutoCloseable schedule(Duration every, int limit, @Nullable Consumer<Pass> onPass) {
        Objects.requireNonNull(every, "every must not be null");
        if (every.compareTo(SHORTEST_INTERVAL) < 0 || every.compareTo(LONGEST_INTERVAL) > 0) {
            throw new IllegalArgumentException("every must be between 1 ms and 1 day, was " + every);
        }
        checkLimit(limit);
        return RecoverySchedule.start(this, every, limit, onPass == null ? pass -> {} : onPass);
    }

    /**
     * {@return claims of this effect that wait for an operator, at most {@code limit}, in key order}
     *
     * @param limit from 1 to {@value #MAX_LIMIT}
     * @throws IllegalArgumentException if {@code limit} is out of range
     */
    public List<Unsettled<R>> needingReconciliation(int limit) {
        return unsettled(ClaimState.NEEDS_RECONCILIATION, limit);
    }

    /**
     * {@return claims of this effect in flight now (a call running, or an unknown outcome waiting for
     * its lookup), at most {@code limit}, in key order}
     *
     * @param limit from 1 to {@value #MAX_LIMIT}
     * @throws IllegalArgumentException if {@code limit} is out of range
     */
    public List<Unsettled<R>> inFlight(int limit) {
        return unsettled(ClaimState.IN_FLIGHT, limit);
    }

    private List<Unsettled<R>> unsettled(ClaimState state, int limit) {
        checkLimit(limit);
        List<Unsettled<R>> out = new ArrayList<>();
        for (EffectStatements.Stuck s : flow.unsettled(state, limit)) {
            // a row whose request no longer decodes is listed as such, not an error for the whole list
            EffectFlow.DecodedRequest<R> request = flow.decodeRequest(s.scope(), s.key(), s.request());
            out.add(new Unsettled<>(
                    s.scope(),
                    s.key(),
                    request.request(),
                    s.fence(),
                    s.lookups(),
                    state == ClaimState.NEEDS_RECONCILIATION ? s.since() : null,
                    s.nextLookupAt(),
                    request.problem()));
        }
        return out;
    }

    private static void checkLimit(int limit) {
        if (limit < 1 || limit > MAX_LIMIT) {
            throw new IllegalArgumentException("limit must be between 1 and " + MAX_LIMIT + ", was " + limit);
        }
    }

    /** How a claim that a pass took over ended. */
    public enum Ending {
        /** The lookup found the remote's answer; it is recorded. */
        FOUND,
        /** The remote refused it definitely; the refusal is recorded. */
        REFUSED,
        /** The lookup found it absent (a remote that reads its own writes): sent again with the same key. */
        RESENT,
        /** Still unknown: looked up again on the lookup schedule. */
        UNKNOWN,
        /** Unknown through every lookup: handed to an operator ({@link ClaimAdmin}). */
        RECONCILIATION,
        /** Another holder took it over or settled it meanwhile. */
        LOST_FENCE,
        /** An error (logged); tried again on the lookup schedule. */
        FAILED,
        /** Not settled: the pass was stopped, and the claim's lease ended at once for the next recoverer. */
        HANDED_BACK,
        /**
         * Settled by statement: sent (again) without a definite answer; its outcome is read from the
         * remote's statement ({@link StatementReconciliation}).
         */
        AWAITING_STATEMENT;

        /** {@return the lower-case name, as logs and the {@code idemtx.recovery.*} meters show it: {@code lost_fence}} */
        public String tag() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** {@return the {@link #tag()}, so that a pass's counts print as logs showed them before: {@code {found=1}}} */
        @Override
        public String toString() {
            return tag();
        }

        static Ending of(EffectFlow.Settled settled) {
            return switch (settled) {
                case FOUND -> FOUND;
                case REFUSED -> REFUSED;
                case RESENT -> RESENT;
                case UNKNOWN -> UNKNOWN;
                case RECONCILIATION -> RECONCILIATION;
                case LOST_FENCE -> LOST_FENCE;
                case FAILED -> FAILED;
                case HANDED_BACK -> HANDED_BACK;
                case AWAITING_STATEMENT -> AWAITING_STATEMENT;
            };
        }
    }

    /**
     * What a recovery pass did, by how each claim it took over ended.
     *
     * @param counts how many claims ended each way; ways that did not occur are absent; unmodifiable,
     *     in the order of {@link Ending}
     */
    public record Pass(Map<Ending, Integer> counts) {
        /**
         * Copies {@code counts}.
         *
         * @throws NullPointerException if {@code counts} or one of its keys or values is null
         */
        public Pass {
            Map<Ending, Integer> copy = new EnumMap<>(Ending.class);
            counts.forEach((how, n) -> copy.put(Objects.requireNonNull(how), Objects.requireNonNull(n)));
            counts = Collections.unmodifiableMap(copy);
        }

        /** {@return how many claims the pass took over} */
        public int total() {
            return counts.values().stream().mapToInt(Integer::intValue).sum();
        }

        /**
         * {@return how many claims ended {@code how}; 0 for a way that did not occur}
         *
         * @param how the way
         * @throws NullPointerException if {@code how} is null
         */
        public int count(Ending how) {
            return counts.getOrDefault(Objects.requireNonNull(how, "how must not be null"), 0);
        }
    }

    /**
     * A claim that is not settled.
     *
     * @param scope the claim's scope
     * @param key the claim's key
     * @param request the stored request; null when it no longer decodes (then {@code undecodable} says why)
     * @param fence the current holder's fencing token
     * @param lookups how many attempts on its unknown outcome went unanswered
     * @param since when it was handed to reconciliation (null while in flight)
     * @param nextLookupAt when the recoverer looks it up next (null: as soon as its lease passes)
     * @param undecodable null, or why the stored request no longer decodes (its class changed in a
     *     deploy): the recoverer still looks it up by its downstream key, never sends it again, and an
     *     operator can resolve it
     * @param <R> the request type
     */
    public record Unsettled<R>(
            Scope scope,
            IdempotencyKey key,
            @Nullable R request,
            long fence,
            int lookups,
            @Nullable Instant since,
            @Nullable Instant nextLookupAt,
            @Nullable String undecodable) {}
}
