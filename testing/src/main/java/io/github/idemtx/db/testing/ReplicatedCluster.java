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

    /**
     * pgjdbc's multi-host URL of the {@code postgres} database on these loopback ports, reaching
     * whichever is the primary when a connection opens. {@code hostRecheckSeconds}: how long pgjdbc
     * trusts what it learnt of a host (down, or a standby) before asking it again; 10 s by default,
     * short here since a failover changes the roles.
     */
    static String multiHostUrl(java.util.stream.IntStream ports) {
        return "jdbc:postgresql://"
                + ports.mapToObj(p -> "127.0.0.1:" + p).collect(java.util.stream.Collectors.joining(","))
                + "/postgres?targetServerType=primary&hostRecheckSeconds=1";
    }
}
