package io.github.idemtx.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import org.HdrHistogram.Histogram;

/**
 * One strategy at one thread count in one round: what the driver measured.
 *
 * @param wire round trips, bytes sent and bytes received on all bench connections over the window
 * @param wireCalls the operations those wire counts are divided by
 */
record SegmentResult(
        String phase,
        int round,
        String strategy,
        int threads,
        ClaimTable.Stats atStart,
        long measured,
        long errors,
        String firstError,
        double seconds,
        Histogram histogram,
        Map<Strategy.Kind, Long> kinds,
        long[] wire,
        long wireCalls,
        Map<String, Object> extra) {

    /** Calls completed per second (for the burst: calls of all threads, duplicates included). */
    double callsPerSecond() {
        return seconds > 0 ? measured / seconds : 0;
    }

    /**
     * The headline throughput: operations per second, except for the duplicate burst, where it is
     * distinct effects (executed transfers) per second.
     */
    double opsPerSecond() {
        if (strategy.equals(Strategies.BURST)) {
            return seconds > 0 ? kinds.get(Strategy.Kind.EXECUTED) / seconds : 0;
        }
        return callsPerSecond();
    }

    double roundTripsPerCall() {
        return (double) wire[0] / wireCalls;
    }

    Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("phase", phase);
        m.put("round", round);
        m.put("strategy", strategy);
        m.put("threads", threads);
        m.put("claim_rows_at_start", atStart.rows());
        m.put("claim_table_bytes_at_start", atStart.bytes());
        m.put("ops_per_s", opsPerSecond());
        m.put("calls_per_s", callsPerSecond());
        m.put("measured_calls", measured);
        m.put("seconds", seconds);
        m.put("errors", errors);
        if (firstError != null) {
            m.put("first_error", firstError);
        }
        m.put("p50_ms", histogram.getValueAtPercentile(50) / 1000.0);
        m.put("p99_ms", histogram.getValueAtPercentile(99) / 1000.0);
        m.put("p999_ms", histogram.getValueAtPercentile(99.9) / 1000.0);
        m.put("round_trips_per_call", roundTripsPerCall());
        m.put("bytes_sent_per_call", (double) wire[1] / wireCalls);
        m.put("bytes_received_per_call", (double) wire[2] / wireCalls);
        Map<String, Object> k = new LinkedHashMap<>();
        kinds.forEach((kind, n) -> k.put(kind.name().toLowerCase(java.util.Locale.ROOT), n));
        m.put("outcomes", k);
        m.putAll(extra);
        return m;
    }
}
