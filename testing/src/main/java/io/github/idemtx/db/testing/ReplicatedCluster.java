package io.github.idemtx.db.testing;

/**
 * Servers of a test's own that replicate and fail over ({@link FailoverCluster}, {@link
 * PatroniCluster}), as clients and failure messages see them: one URL that finds the primary.
 */
public interface ReplicatedCluster extends AutoCloseable {

    /** pgjdbc's multi-host URL of the {@code postgres} database, reaching the primary. */
    String url();

    String user();

    /** For messages: the set-up and the servers as they are now. */
    String description();

    /** The servers' logs, the last {@code maxChars} characters of each, for failure messages. */
    String logTail(int maxChars);

    /** Stops every server and deletes their directories. */
    @Override
    void close();
}
