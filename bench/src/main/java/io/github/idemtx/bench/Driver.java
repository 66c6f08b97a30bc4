package io.github.idemtx.bench;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.HdrHistogram.Histogram;

/**
 * The closed-loop load driver: N client threads, each sending its next operation as soon as the
 * previous one returned, for a warm-up that is not recorded and then a measured window (a duration
 * or an operation count). Latencies go to HdrHistogram in microseconds; the throughput counts the
 * operations that completed inside the measured window.
 */
final class Driver implements AutoCloseable {

    private static final long HIGHEST_MICROS = TimeUnit.MINUTES.toMicros(10);

    private final ExecutorService threads;
    private final CpuProbe cpu;

    Driver(int maxThreads, CpuProbe cpu) {
        this.cpu = cpu;
        AtomicInteger n = new AtomicInteger();
        this.threads = Executors.newFixedThreadPool(maxThreads, r -> {
            Thread t = new Thread(r, "bench-client-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    /** How one segment runs, and its shared state while it runs. */
    static final class Segment {
        final boolean opsMode;
        final long warmupNanos;
        final long measureNanos;
        final long warmupOps;
        final long measureOps;
        private volatile boolean stop;
        private volatile boolean measuring;
        private volatile long measureStart;
        private volatile long measureEnd;
        private final AtomicLong issued = new AtomicLong();

        Segment(Options o) {
            this(o.opsMode(), o.warmup().toNanos(), o.duration().toNanos(), o.warmupOps(), o.ops());
        }

        Segment(boolean opsMode, long warmupNanos, long measureNanos, long warmupOps, long measureOps) {
            this.opsMode = opsMode;
            this.warmupNanos = warmupNanos;
            this.measureNanos = measureNanos;
            this.warmupOps = warmupOps;
            this.measureOps = measureOps;
        }

        /** A segment that only warms up: runs {@code nanos} (or {@code ops}), records nothing useful. */
        static Segment warmupOnly(Options o, long nanos, long ops) {
            return o.opsMode() ? new Segment(true, 0, 0, 0, Math.max(1, ops)) : new Segment(false, 0, nanos, 0, 0);
        }

        boolean measuring() {
            return measuring;
        }

        double measuredSeconds() {
            long end = measureEnd != 0 ? measureEnd : System.nanoTime();
            return measureStart == 0 ? 0 : (end - measureStart) / 1e9;
        }

        /** For an independent worker about to start an operation: -1 stop, 0 warm-up, 1 measured. */
        private int next() {
            if (!opsMode) {
                return stop ? -1 : 0;
            }
            long n = issued.incrementAndGet();
            if (n > warmupOps + measureOps) {
                return -1;
            }
            if (n == warmupOps + 1) {
                markStart();
            }
            return n > warmupOps ? 1 : 0;
        }

        /** Same for a whole wave of {@code threads} operations. */
        private int nextWave(int threads) {
            if (!opsMode) {
                return stop ? -1 : 0;
            }
            long before = issued.getAndAdd(threads);
            if (before >= warmupOps + measureOps) {
                return -1;
            }
            if (before >= warmupOps && measureStart == 0) {
                markStart();
            }
            return before >= warmupOps ? 1 : 0;
        }

        private synchronized void markStart() {
            if (measureStart == 0) {
                measureStart = System.nanoTime();
                measuring = true;
            }
        }
    }

    /** What one client thread saw. */
    private static final class Tally {
        final Histogram histogram = new Histogram(HIGHEST_MICROS, 3);
        final long[] kinds = new long[Strategy.Kind.values().length];
        long measured;
        long errors;
        long lastEnd;
    }

    SegmentResult run(
            Strategy strategy, int threadCount, Segment seg, String phase, int round, ClaimTable.Stats atStart)
            throws Exception {
        Supplier<Object> waves = strategy.waves();
        CyclicBarrier barrier = null;
        AtomicReference<Object> wave = new AtomicReference<>();
        int[] waveVerdict = new int[1];
        if (waves != null) {
            barrier = new CyclicBarrier(threadCount, () -> {
                waveVerdict[0] = seg.nextWave(threadCount);
                wave.set(waveVerdict[0] < 0 ? null : waves.get());
            });
        }
        AtomicReference<Throwable> firstError = new AtomicReference<>();
        List<Strategy.Worker> workers = new ArrayList<>();
        for (int i = 0; i < threadCount; i++) {
            workers.add(strategy.worker(i, threadCount));
        }
        if (cpu != null) {
            cpu.refresh();
        }
        Strategy.SideTask side = strategy.sideTask(seg);
        long[] cpu0 = cpuSample();
        long[] cpuStart = cpu0;
        long[] cpu1 = null;
        long[] rt0 = CountingSocketFactory.snapshot();
        long[] rtStart = rt0;
        List<Future<Tally>> futures = new ArrayList<>();
        final CyclicBarrier b = barrier;
        for (Strategy.Worker worker : workers) {
            futures.add(threads.submit(() -> loop(worker, seg, b, wave, waveVerdict, firstError)));
        }
        long[] rt1;
        try {
            if (!seg.opsMode) {
                sleepNanos(seg.warmupNanos);
                rtStart = CountingSocketFactory.snapshot();
                cpuStart = cpuSample();
                seg.markStart();
                sleepNanos(seg.measureNanos);
                seg.measuring = false;
                seg.measureEnd = System.nanoTime();
                rt1 = CountingSocketFactory.snapshot();
                cpu1 = cpuSample();
                seg.stop = true;
            } else {
                rt1 = null;
            }
        } finally {
            seg.stop = true;
        }
        List<Tally> tallies = new ArrayList<>();
        try {
            for (Future<Tally> f : futures) {
                tallies.add(f.get(10, TimeUnit.MINUTES));
            }
        } catch (TimeoutException e) {
            throw new IllegalStateException(strategy.name() + ": a client thread did not finish", e);
        } finally {
            if (side != null) {
                side.close();
            }
        }
        long measured = 0;
        long errors = 0;
        long lastEnd = 0;
        Histogram histogram = new Histogram(HIGHEST_MICROS, 3);
        Map<Strategy.Kind, Long> kinds = new EnumMap<>(Strategy.Kind.class);
        for (Strategy.Kind k : Strategy.Kind.values()) {
            kinds.put(k, 0L);
        }
        for (Tally t : tallies) {
            histogram.add(t.histogram);
            measured += t.measured;
            errors += t.errors;
            lastEnd = Math.max(lastEnd, t.lastEnd);
            for (Strategy.Kind k : Strategy.Kind.values()) {
                kinds.merge(k, t.kinds[k.ordinal()], Long::sum);
            }
        }
        double seconds;
        if (seg.opsMode) {
            seg.measureEnd = lastEnd;
            seconds = seg.measureStart == 0 ? 0 : Math.max(1e-9, (lastEnd - seg.measureStart) / 1e9);
            rt1 = CountingSocketFactory.snapshot();
            rtStart = rt0; // in ops mode the counters cover the warm-up too; rates below are per call
            cpu1 = cpuSample();
            cpuStart = cpu0;
        } else {
            seconds = (seg.measureEnd - seg.measureStart) / 1e9;
        }
        long[] wire = new long[rt1.length];
        for (int i = 0; i < wire.length; i++) {
            wire[i] = rt1[i] - rtStart[i];
        }
        long wireCalls = seg.opsMode ? seg.issued.get() : measured + errors;
        Map<String, Object> extra = new java.util.LinkedHashMap<>();
        if (cpuStart[0] >= 0 && cpu1[0] >= 0) {
            extra.put("client_cpu_us_per_call", (cpu1[0] - cpuStart[0]) / 1e3 / Math.max(1, wireCalls));
        }
        if (cpuStart[1] >= 0 && cpu1[1] >= 0) {
            extra.put("server_cpu_us_per_call", (cpu1[1] - cpuStart[1]) / 1e3 / Math.max(1, wireCalls));
        }
        if (side != null) {
            extra.putAll(side.figures());
        }
        Throwable err = firstError.get();
        return new SegmentResult(
                phase,
                round,
                strategy.name(),
                threadCount,
                atStart,
                measured,
                errors,
                err == null ? null : err.toString(),
                seconds,
                histogram,
                kinds,
                wire,
                Math.max(1, wireCalls),
                extra);
    }

    private static Tally loop(
            Strategy.Worker worker,
            Segment seg,
            CyclicBarrier barrier,
            AtomicReference<Object> wave,
            int[] waveVerdict,
            AtomicReference<Throwable> firstError)
            throws Exception {
        Tally t = new Tally();
        while (true) {
            int verdict;
            Object input = null;
            if (barrier != null) {
                try {
                    barrier.await(5, TimeUnit.MINUTES);
                } catch (BrokenBarrierException | TimeoutException e) {
                    throw new IllegalStateException("the duplicate-burst barrier broke", e);
                }
                verdict = waveVerdict[0];
                input = wave.get();
            } else {
                verdict = seg.next();
            }
            if (verdict < 0) {
                return t;
            }
            long t0 = System.nanoTime();
            Strategy.Kind kind;
            try {
                kind = worker.op(input);
            } catch (Exception | Error e) {
                firstError.compareAndSet(null, e);
                t.errors++;
                if (e instanceof Error error) {
                    throw error;
                }
                continue;
            }
            long t1 = System.nanoTime();
            boolean record = seg.opsMode ? verdict > 0 : seg.measuring;
            if (record) {
                t.histogram.recordValue(Math.min(HIGHEST_MICROS, Math.max(1, (t1 - t0) / 1000)));
                t.kinds[kind.ordinal()]++;
                t.measured++;
                t.lastEnd = t1;
            }
        }
    }

    private long[] cpuSample() {
        return cpu == null ? new long[] {-1, -1} : cpu.sample();
    }

    private static void sleepNanos(long nanos) throws InterruptedException {
        if (nanos > 0) {
            TimeUnit.NANOSECONDS.sleep(nanos);
        }
    }

    @Override
    public void close() {
        threads.shutdownNow();
    }
}
