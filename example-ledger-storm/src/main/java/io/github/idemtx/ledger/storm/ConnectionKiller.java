package io.github.idemtx.ledger.storm;

import io.github.idemtx.db.testing.Backends;
import java.sql.SQLException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/** The storm's fault without {@code --failover}: the ledger's busy database connections killed at random moments. */
final class ConnectionKiller {

    private ConnectionKiller() {}

    /**
     * Kills a random busy connection of the ledger on {@code schema} {@code perSecond} times a second, on average, while
     * {@code running}; counts each kill in {@code faults}. Returns at once for a rate of 0.
     */
    static void run(
            SideDatabase db,
            String schema,
            double perSecond,
            AtomicBoolean running,
            AtomicLong faults,
            java.io.PrintStream progress) {
        if (perSecond <= 0) {
            return;
        }
        ThreadLocalRandom random = ThreadLocalRandom.current();
        try (Backends backends = new Backends(db.connect())) {
            // exponential pauses: kills arrive as a Poisson process of the given rate
            // the sessions of this storm's ledger only (Backends picks in its own database)
            backends.killRepeatedly(
                    io.github.idemtx.ledger.LedgerServer.applicationName(schema),
                    0.0,
                    () -> Math.min((long) (-Math.log(1 - random.nextDouble()) * 1000 / perSecond), 2000),
                    running::get,
                    state -> faults.incrementAndGet());
        } catch (SQLException | RuntimeException e) {
            progress.println("storm: the fault injector stopped: " + e);
        }
    }
}
