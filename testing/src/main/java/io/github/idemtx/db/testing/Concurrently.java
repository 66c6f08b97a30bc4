package io.github.idemtx.db.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs tasks concurrently: each on a thread of its own, released at the same instant ({@link #run}),
 * or on a fixed number of threads ({@link #onThreads}); collects what each returned or threw.
 */
public final class Concurrently {

    /** What one task returned, or what it threw (then {@code value} is null). */
    public record Result<V>(V value, Throwable error) {}

    private static final long TASK_TIMEOUT_MINUTES = 2;

    private Concurrently() {}

    /** Starts every task on its own thread, all released together, and waits for each (2 min at most). */
    public static <V> List<Result<V>> run(List<? extends Callable<V>> tasks) throws InterruptedException {
        CountDownLatch ready = new CountDownLatch(tasks.size());
        CountDownLatch go = new CountDownLatch(1);
        List<Callable<V>> released = new ArrayList<>();
        for (Callable<V> task : tasks) {
            released.add(() -> {
                ready.countDown();
                go.await();
                return task.call();
            });
        }
        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, tasks.size()));
        try {
            List<Future<V>> futures = new ArrayList<>();
            for (Callable<V> task : released) {
                futures.add(pool.submit(task));
            }
            ready.await();
            go.countDown();
            return collect(futures);
        } finally {
            stop(pool);
        }
    }

    /** {@link #run} with {@code n} copies of {@code task}. */
    public static <V> List<Result<V>> times(int n, Callable<V> task) throws InterruptedException {
        List<Callable<V>> tasks = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            tasks.add(task);
        }
        return run(tasks);
    }

    /**
     * Runs the tasks on {@code threads} threads and waits for each (2 min at most); throws the first
     * failure, in task order, once all have ended.
     */
    public static void onThreads(int threads, List<? extends Callable<?>> tasks) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<?>> futures = new ArrayList<>();
        try {
            for (Callable<?> task : tasks) {
                futures.add(pool.submit(task));
            }
            for (Result<?> result : collect(futures)) {
                if (result.error() instanceof Exception e) {
                    throw e;
                } else if (result.error() instanceof Error e) {
                    throw e;
                }
            }
        } finally {
            stop(pool);
        }
    }

    private static <V> List<Result<V>> collect(List<? extends Future<? extends V>> futures)
            throws InterruptedException {
        List<Result<V>> results = new ArrayList<>();
        for (Future<? extends V> f : futures) {
            try {
                results.add(new Result<>(f.get(TASK_TIMEOUT_MINUTES, TimeUnit.MINUTES), null));
            } catch (ExecutionException e) {
                results.add(new Result<>(null, e.getCause()));
            } catch (TimeoutException e) {
                f.cancel(true);
                results.add(new Result<>(null, e));
            }
        }
        return results;
    }

    private static void stop(ExecutorService pool) throws InterruptedException {
        pool.shutdownNow();
        pool.awaitTermination(1, TimeUnit.MINUTES);
    }
}
