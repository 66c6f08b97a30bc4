package io.github.idemtx.db.testing;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.postgresql.PGConnection;

/**
 * Terminates PostgreSQL backends ({@code pg_terminate_backend}) from a side connection of its own:
 * one backend by pid, or a random session of an application. The one backend killer of the tests and
 * of the ledger's storm. Thread-safe (one caller at a time); closing it closes the side connection.
 */
public final class Backends implements AutoCloseable {

    private final Connection side;
    private final PreparedStatement terminate;
    private final PreparedStatement alive;
    private final PreparedStatement pick;

    /** Takes {@code side} over: it must reach the server itself, not a pooler in front of it. */
    public Backends(Connection side) {
        this.side = side;
        try {
            side.setAutoCommit(true);
            terminate = side.prepareStatement("select pg_terminate_backend(?)");
            alive = side.prepareStatement("select count(*) from pg_stat_activity where pid = ?");
            // a session of the application in this database (never another program's elsewhere on a
            // shared server), other than this one: one that runs a statement or sits in a transaction,
            // or, with the given chance, an idle one
            pick = side.prepareStatement("select pid, state from pg_stat_activity"
                    + " where application_name = ? and datname = current_database() and pid <> pg_backend_pid()"
                    + " and (state <> 'idle' or random() < ?) order by random() limit 1");
        } catch (SQLException e) {
            close();
            throw new IllegalStateException("cannot prepare the backend killer's statements", e);
        }
    }

    /**
     * The backend serving {@code connection} (a pgjdbc connection), known without a round trip; behind
     * a pooler, the pooler's session, not a server backend (see {@link #kill(Connection)}).
     */
    public static int pid(Connection connection) {
        try {
            return connection.unwrap(PGConnection.class).getBackendPID();
        } catch (SQLException e) {
            throw new IllegalStateException("not a pgjdbc connection", e);
        }
    }

    /** Sends the signal; true if {@code pid} was a backend to signal. Does not wait. */
    public synchronized boolean signal(int pid) {
        try {
            terminate.setInt(1, pid);
            try (ResultSet rs = terminate.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("pg_terminate_backend(" + pid + ") failed", e);
        }
    }

    /** Signals {@code pid} and waits (10 s at most) until the backend is gone; true if it was there to kill. */
    public synchronized boolean kill(int pid) {
        boolean signalled = signal(pid);
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (isAlive(pid)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("backend " + pid + " still alive 10 s after pg_terminate_backend");
            }
            Thread.onSpinWait();
        }
        return signalled;
    }

    /**
     * Terminates the server backend serving {@code connection} now and waits until it is gone. The
     * backend is asked with {@code pg_backend_pid()} on that connection (one statement on it), so this
     * is right also through a transaction pooler, where {@link #pid} names the pooler's session.
     */
    public boolean kill(Connection connection) {
        int pid;
        try (java.sql.Statement s = connection.createStatement();
                ResultSet rs = s.executeQuery("select pg_backend_pid()")) {
            rs.next();
            pid = rs.getInt(1);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot ask the connection for its backend", e);
        }
        return kill(pid);
    }

    /** Whether {@code pid} is a backend of the server. */
    public synchronized boolean isAlive(int pid) {
        try {
            alive.setInt(1, pid);
            try (ResultSet rs = alive.executeQuery()) {
                rs.next();
                return rs.getInt(1) > 0;
            }
        } catch (SQLException e) {
            throw new IllegalStateException("cannot read pg_stat_activity", e);
        }
    }

    /**
     * Terminates one random session of {@code application}: a busy one (running a statement or
     * inside a transaction), or an idle one with chance {@code idleChance}. Does not wait.
     *
     * @return the state the session was in ({@code active}, {@code idle in transaction}, ...), or null
     *     when there was none to terminate
     */
    public synchronized String killOne(String application, double idleChance) {
        try {
            pick.setString(1, application);
            pick.setDouble(2, idleChance);
            try (ResultSet victim = pick.executeQuery()) {
                if (!victim.next()) {
                    return null;
                }
                return signal(victim.getInt(1)) ? victim.getString(2) : null;
            }
        } catch (SQLException e) {
            throw new IllegalStateException("cannot pick a session of " + application, e);
        }
    }

    /**
     * Kills a random session of {@code application} (see {@link #killOne}) after each pause, until
     * {@code running} says no or the thread is interrupted; reports each kill's state to {@code killed}.
     * Runs on the calling thread.
     */
    public void killRepeatedly(
            String application,
            double idleChance,
            LongSupplier pauseMillis,
            BooleanSupplier running,
            Consumer<String> killed) {
        try {
            while (running.getAsBoolean()) {
                Thread.sleep(pauseMillis.getAsLong());
                String state = killOne(application, idleChance);
                if (state != null) {
                    killed.accept(state);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public synchronized void close() {
        try {
            side.close();
        } catch (SQLException ignored) {
            // the side connection only ever reads pg_stat_activity and sends signals
        }
    }
}
