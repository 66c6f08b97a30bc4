package io.github.idemtx.ledger.storm;

import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.ConcurrentHistogram;

/**
 * What the storm's clients saw, counted as they go: shared by the clients that fill it, the fault
 * drivers that add their faults, and the checks and the report that read it at the end.
 */
final class StormTally {

    /** A final answer: neither a timeout, a 409 nor a 5xx. */
    record Answer(int status, String location, byte[] body) {
        boolean sameAs(Answer other) {
            return status == other.status
                    && Objects.equals(location, other.location)
                    && Arrays.equals(body, other.body);
        }
    }

    final ConcurrentHistogram latency = new ConcurrentHistogram(3);
    final AtomicLong requests = new AtomicLong();
    final AtomicLong replays = new AtomicLong();
    final AtomicLong conflicts = new AtomicLong();
    final AtomicLong serverErrors = new AtomicLong();
    final AtomicLong timeouts = new AtomicLong();
    final AtomicLong faults = new AtomicLong();
    /** Keys that got two different answers. */
    final AtomicInteger mismatchedReplays = new AtomicInteger();
    /** The first final answer of each intent, by the intent's index. */
    final Map<Integer, Answer> finalAnswers = new ConcurrentHashMap<>();
    /** Set when a kill and promotion failed: there may be no primary left, so the clients stop instead of retrying forever. */
    volatile boolean aborted;
}
