package io.github.idemtx.db.testing;

/**
 * The removal of a test's own servers, run once: by the owner's {@code close()}, or by a JVM
 * shutdown hook when a test never gets to close it (a crash, a kill, a forgotten close). Shared by
 * {@link ThrowawayCluster}, {@link FailoverCluster} and {@link PatroniCluster}.
 */
final class Cleanup {

    private final String what;
    private final Runnable destroy;
    private final Thread hook;

    /**
     * @param what what is removed, for the hook's thread name and its message
     * @param destroy stops and deletes everything; harmless when run twice
     */
    Cleanup(String what, Runnable destroy) {
        this.what = what;
        this.destroy = destroy;
        this.hook = new Thread(this::quietly, what.replace(' ', '-') + "-cleanup");
    }

    /** From now on, the JVM's exit removes it if {@link #now()} has not. */
    void onExit() {
        Runtime.getRuntime().addShutdownHook(hook);
    }

    /** Removes it now (a failure is thrown), and no longer at the JVM's exit. */
    void now() {
        try {
            destroy.run();
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs anyway; destroying twice is harmless
            }
        }
    }

    /**
     * Runs {@code start}; when it fails, removes what it left behind and throws its failure (with a
     * failed removal suppressed in it).
     */
    void orRemove(Runnable start) {
        try {
            start.run();
        } catch (RuntimeException e) {
            try {
                now();
            } catch (RuntimeException notRemoved) {
                e.addSuppressed(notRemoved);
            }
            throw e;
        }
    }

    private void quietly() {
        try {
            destroy.run();
        } catch (RuntimeException e) {
            System.err.println("could not clean up " + what + ": " + e.getMessage());
        }
    }
}
