package io.github.idemtx.bench;

import java.util.Map;
import java.util.function.Supplier;

/** One way of running the transfer; the driver runs its workers in a closed loop. */
interface Strategy {

    /** What one operation turned out as. */
    enum Kind {
        /** The transfer ran and committed (a distinct effect). */
        EXECUTED,
        /** A stored result was replayed without waiting for anyone. */
        REPLAYED,
        /** A stored result was replayed after waiting for the concurrent holder of the key. */
        WAITED,
        /** The library reported the key in progress (the duplicate wait ran out). */
        IN_PROGRESS,
        /** Anything else (a mismatch, an unexpected outcome); counted, never expected. */
        OTHER
    }

    String name();

    /** A worker for client thread {@code index} of {@code threads}; confined to that thread. */
    Worker worker(int index, int threads);

    /**
     * For strategies whose threads all send the same thing at the same instant: makes the input of
     * the next wave, called once a wave by one thread while all are stopped at the barrier.
     * Null (the default) for independent threads.
     */
    default Supplier<Object> waves() {
        return null;
    }

    /**
     * Something to run beside the workers for the whole segment (the purge); the driver starts it
     * before the workers and closes it after them. Null for nothing.
     */
    default SideTask sideTask(Driver.Segment segment) {
        return null;
    }

    /** One client thread's operation. */
    @FunctionalInterface
    interface Worker {
        /**
         * Runs one operation.
         *
         * @param wave the wave's shared input for lockstep strategies, else null
         */
        Kind op(Object wave) throws Exception;
    }

    /** Work running beside a segment; reports figures for the measured window. */
    interface SideTask extends AutoCloseable {
        Map<String, Object> figures();

        @Override
        void close();
    }
}
