package io.github.idemtx.jooq;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Runs tasks on their own threads, released at the same instant, and collects what each returned or threw. */
final class Concurrently {

    record Result<V>(V value, Throwable error) {}

    private Concurrently() {}

    static <V> List<Result<V>> run(List<Callable<V>> tasks) throws InterruptedException {
        ExecutorService pool = Executors.newFixedThreadPool(tasks.size());
        CountDownLatch ready = new CountDownLatch(tasks.size());
        CountDownLatch go = new CountDownLatch(1);
        try {
            List<Future<V>> futures = new ArrayList<>();
            for (Callable<V> task : tasks) {
                futures.add(pool.submit(() -> {
                    ready.countDown();
                    go.await();
                    return task.call();
                }));
            }
            ready.await();
            go.countDown();
            List<Result<V>> results = new ArrayList<>();
            for (Future<V> f : futures) {
                try {
                    results.add(new Result<>(f.get(2, TimeUnit.MINUTES), null));
                } catch (java.util.concurrent.ExecutionException e) {
                    results.add(new Result<>(null, e.getCause()));
                } catch (java.util.concurrent.TimeoutException e) {
                    results.add(new Result<>(null, e));
                }
            }
            return results;
        } finally {
            pool.shutdownNow();
            pool.awaitTermination(1, TimeUnit.MINUTES);
        }
    }

    static <V> List<Result<V>> times(int n, Callable<V> task) throws InterruptedException {
        List<Callable<V>> tasks = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            tasks.add(task);
        }
        return run(tasks);
    }
}
