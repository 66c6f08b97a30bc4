package io.github.idemtx.jooq.schema;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.support.Db;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The test support is blind to strangers on the same server (issue 46): this JVM works in a database
 * of its own, and a lock waiter in another database (another program's, another build's, another
 * fork's) is not one of "this test's waiters", while one in its own database is.
 */
@DatabaseTest
// a waiter that never comes fails the test, never hangs the build (a thread blocked in pgjdbc ignores interrupts)
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class TestDatabaseIsolationTest {

    private static final TestDatabase DATABASE = Db.DATABASE;

    @Test
    void eachTestJvmWorksInADatabaseOfItsOwn() throws SQLException {
        assertThat(DATABASE.ownDatabase())
                .as("user %s may create databases on this server", DATABASE.user())
                .isTrue();
        try (Connection c = DATABASE.connect();
                Connection given = given();
                Statement s = c.createStatement();
                Statement g = given.createStatement();
                ResultSet own = s.executeQuery("select current_database()");
                ResultSet theirs = g.executeQuery("select current_database()")) {
            own.next();
            theirs.next();
            assertThat(own.getString(1)).isEqualTo(DATABASE.schema()).isNotEqualTo(theirs.getString(1));
        }
    }

    @Test
    void aLockWaiterInAnotherDatabaseIsNotThisTestsWhileOneInItsOwnIs() throws Exception {
        // a key of this run's own: a second build running this test beside it locks another
        String lock = "select pg_advisory_xact_lock("
                + java.util.concurrent.ThreadLocalRandom.current().nextLong() + ")";
        try (Connection holder = given();
                Connection stranger = given()) {
            String theirs = stranger.getCatalog(); // before its connection is busy waiting
            int holderPid = pid(holder);
            holder.setAutoCommit(false);
            holder.createStatement().execute(lock);
            Future<?> waiting = waiter(stranger, lock);
            awaitWaiterOn(holderPid);
            long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            assertThat(DATABASE.awaitLockWaitersUnless("true", 1, () -> System.nanoTime() > giveUp))
                    .as("a stranger's lock waiter in database %s counts as this test's", theirs)
                    .isFalse();
            holder.rollback();
            waiting.get(10, TimeUnit.SECONDS);
        }

        try (Connection holder = DATABASE.connect();
                Connection mine = DATABASE.connect()) {
            int waiterPid = pid(mine); // before its connection is busy waiting: pgjdbc would queue this behind it
            holder.setAutoCommit(false);
            holder.createStatement().execute(lock);
            Future<?> waiting = waiter(mine, lock);
            DATABASE.awaitLockWaiters("pid = " + waiterPid, 1);
            holder.rollback();
            waiting.get(10, TimeUnit.SECONDS);
        }
    }

    private static Future<?> waiter(Connection c, String sql) {
        ExecutorService one = Executors.newSingleThreadExecutor();
        try {
            return one.submit(() -> {
                try (Statement s = c.createStatement()) {
                    s.execute(sql);
                }
                return null;
            });
        } finally {
            one.shutdown();
        }
    }

    /** Until a session of the given database waits on a lock that backend {@code holderPid} holds. */
    private static void awaitWaiterOn(int holderPid) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        try (Connection look = given();
                Statement s = look.createStatement()) {
            while (true) {
                try (ResultSet rs = s.executeQuery("select count(*) from pg_stat_activity where datname ="
                        + " current_database() and wait_event_type = 'Lock' and " + holderPid
                        + " = any (pg_blocking_pids(pid))")) {
                    rs.next();
                    if (rs.getInt(1) > 0) {
                        return;
                    }
                }
                assertThat(System.nanoTime())
                        .as("the stranger waits on the lock within 30 s")
                        .isLessThan(deadline);
                Thread.sleep(5);
            }
        }
    }

    private static int pid(Connection c) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("select pg_backend_pid()")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    /** A connection to the database the tests were given: where a stranger would be. */
    private static Connection given() throws SQLException {
        return DATABASE.connectGiven();
    }
}
