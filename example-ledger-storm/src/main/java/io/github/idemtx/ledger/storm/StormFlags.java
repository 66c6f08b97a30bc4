package io.github.idemtx.ledger.storm;

import io.github.idemtx.db.testing.FailoverCluster;
import io.github.idemtx.db.testing.FailoverCluster.Replication;
import io.github.idemtx.db.testing.PatroniCluster;
import io.github.idemtx.ledger.Flags;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/** The storm's command line: its own flags, {@code --failover}'s, and the ledger's it passes on; each refused naming it. */
final class StormFlags {

    private StormFlags() {}

    /** The flags; a bare {@code --failover} means {@code --failover=true}. */
    private static Map<String, String> flags(String[] args) {
        return withSwitches(args, "failover");
    }

    /**
     * The storm's {@code --name=value} flags, where each of {@code switches} may also be given bare
     * ({@code --queue} means {@code --queue=true}); refused, naming the argument, when malformed.
     */
    static Map<String, String> withSwitches(String[] args, String... switches) {
        List<String> bare = Arrays.stream(switches).map(name -> "--" + name).toList();
        return Flags.parse(
                "storm arguments",
                Arrays.stream(args).map(a -> bare.contains(a) ? a + "=true" : a).toArray(String[]::new));
    }

    private static final List<String> FAILOVER_FLAGS =
            List.of("failover", "replication", "failovers", "synchronous-commit", "synchronous-mode", "switchovers");

    /** The {@code --failover} flags, or null without {@code --failover}; refused, naming the flag, when they do not fit. */
    static Storm.FailoverPlan parseFailover(String[] args) {
        Map<String, String> flags = flags(args);
        String on = flags.getOrDefault("failover", "false");
        if (!on.equals("true") && !on.equals("false") && !on.equals("patroni")) {
            throw new IllegalArgumentException(
                    "--failover takes no value (or true or false), or patroni, was '" + on + "'");
        }
        if (on.equals("false")) {
            for (String name : FAILOVER_FLAGS.subList(1, FAILOVER_FLAGS.size())) {
                if (flags.containsKey(name)) {
                    throw new IllegalArgumentException("--" + name + " needs --failover"
                            + (name.equals("synchronous-mode") || name.equals("switchovers") ? "=patroni" : ""));
                }
            }
            return null;
        }
        for (String name : List.of("db-url", "db-user", "db-password", "faults", "base-url", "token")) {
            if (flags.containsKey(name)) {
                throw new IllegalArgumentException((on.equals("patroni")
                                ? "--failover=patroni runs a Patroni cluster of its own and fails it over:"
                                : "--failover runs a primary and a standby of its own and kills the primary:")
                        + " --" + name + " cannot be given with it");
            }
        }
        if (on.equals("patroni")) {
            for (String name : List.of("replication", "synchronous-commit")) {
                if (flags.containsKey(name)) {
                    throw new IllegalArgumentException("--" + name + " is for --failover's own primary and standby;"
                            + " with --failover=patroni say --synchronous-mode=on|strict|off");
                }
            }
            PatroniCluster.SynchronousMode mode = PatroniCluster.SynchronousMode.parse(
                    "--synchronous-mode", flags.getOrDefault("synchronous-mode", "strict"));
            int failovers = Flags.intFlag(flags, "failovers", 2, 0, 100);
            int switchovers = Flags.intFlag(flags, "switchovers", 2, 0, 100);
            if (failovers + switchovers == 0) {
                throw new IllegalArgumentException("--failovers and --switchovers cannot both be 0");
            }
            return Storm.FailoverPlan.patroni(mode, failovers, switchovers);
        }
        for (String name : List.of("synchronous-mode", "switchovers")) {
            if (flags.containsKey(name)) {
                throw new IllegalArgumentException("--" + name + " needs --failover=patroni");
            }
        }
        Replication replication = Replication.parse("--replication", flags.getOrDefault("replication", "sync"));
        String synchronousCommit = flags.getOrDefault("synchronous-commit", "on");
        if (!FailoverCluster.SYNCHRONOUS_COMMITS.contains(synchronousCommit)) {
            throw new IllegalArgumentException("--synchronous-commit must be one of "
                    + new TreeSet<>(FailoverCluster.SYNCHRONOUS_COMMITS) + ", was '" + synchronousCommit + "'");
        }
        if (replication == Replication.ASYNC && flags.containsKey("synchronous-commit")) {
            throw new IllegalArgumentException(
                    "--synchronous-commit says how far a commit waits for a synchronous standby:"
                            + " it needs --replication=sync");
        }
        return new Storm.FailoverPlan(replication, synchronousCommit, Flags.intFlag(flags, "failovers", 1, 1, 100));
    }

    static Storm.Options parse(String[] args) {
        Map<String, String> flags = flags(args);
        Storm.Options o = new Storm.Options(
                Flags.intFlag(flags, "clients", 16, 1, 256),
                Flags.intFlag(flags, "intents", 5000, 1, 10_000_000),
                Flags.doubleFlag(flags, "faults", 5.0, 0, 1000),
                Flags.intFlag(flags, "accounts", 100, 2, 10_000),
                Flags.doubleFlag(flags, "duplicates", 0.3, 0, 1),
                Duration.ofMillis(Flags.intFlag(flags, "timeout-ms", 1500, 50, 60_000)),
                Flags.longFlag(flags, "seed", System.nanoTime()),
                Flags.intFlag(flags, "relay-kills", 6, 0, 1000));
        Set<String> known =
                Set.of("clients", "intents", "faults", "accounts", "duplicates", "timeout-ms", "seed", "relay-kills");
        for (String name : flags.keySet()) {
            if (!known.contains(name)
                    && !FAILOVER_FLAGS.contains(name)
                    && !name.startsWith("db-")
                    && !name.equals("schema")
                    && !name.equals("pool-size")
                    && !name.equals("claim-mode")) {
                throw new IllegalArgumentException(
                        "unknown storm flag --" + name + "; known: " + known + ", " + FAILOVER_FLAGS
                                + " and the ledger's --db-url, --db-user, --db-password, --schema, --pool-size, --claim-mode");
            }
        }
        return o;
    }
}
