package io.github.idemtx.jooq.internal.tx;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.WorkEndedTransactionException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import org.jooq.Configuration;
import org.jooq.DSLContext;
import org.jooq.impl.DefaultConnectionProvider;
import org.jspecify.annotations.Nullable;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

/**
 * Keeps a work (or an effect's local writes) from ending the transaction it was handed, at no round
 * trip: the work's {@code tx} sees {@link #connection()} (a {@link GuardedConnection}), which refuses
 * {@code commit()}, {@code rollback()}, {@code setAutoCommit(true)}, {@code close()} and
 * {@code abort} and every statement that starts with COMMIT, END, ROLLBACK (not ROLLBACK TO), ABORT
 * or PREPARE TRANSACTION (each part of a multi-statement string too, as {@link TransactionSql}
 * reads it) before it goes out; afterwards {@link #check} reads
 * pgjdbc's client-side transaction state to catch what slipped past (a raw {@code Statement}'s
 * multi-statement text). A refused call throws {@link SQLException} with SQLSTATE 2D000 (invalid
 * transaction termination) to the work; the flow then refuses the whole call with
 * {@link WorkEndedTransactionException}, whatever the work made of that SQLException. Confined to
 * the thread running the work.
 */
public final class WorkGuard {

    /** SQLSTATE of "invalid transaction termination", which the server uses for a COMMIT where none may be. */
    static final String INVALID_TERMINATION = "2D000";

    private final Connection raw;
    private final Connection guarded;
    private @Nullable String attempted;
    /** What ended the transaction past the guard, seen at a later call or after the work; null while none did. */
    private @Nullable String endedPast;
    /** Whether a transaction was seen open on the connection (or known open before the work). */
    private boolean sawOpen;

    private @Nullable BaseConnection driver;

    /**
     * @param raw the unit's connection, auto-commit off
     * @param openBefore whether a transaction is known to be open before the work (a claim statement
     *     or a savepoint went first); when not, a work that ran no statement leaves none open
     */
    public WorkGuard(Connection raw, boolean openBefore) {
        this.raw = raw;
        this.sawOpen = openBefore;
        this.guarded = new GuardedConnection(this, raw);
    }

    /** The connection the work's {@code tx} is bound to. */
    public Connection connection() {
        return guarded;
    }

    /**
     * After the work returned: throws {@link WorkEndedTransactionException} when it tried to end its
     * transaction (stopped in time) or did end it (seen afterwards from the transaction state).
     */
    public void check(Scope scope, IdempotencyKey key) {
        WorkEndedTransactionException refused = refusal(scope, key, null);
        if (refused != null) {
            throw refused;
        }
    }

    /**
     * After the work threw {@code failure}: the refusal to throw instead (with {@code failure} as
     * its cause) when the work tried to end or ended its transaction, else null.
     */
    public @Nullable WorkEndedTransactionException refusal(
            Scope scope, IdempotencyKey key, @Nullable Throwable failure) {
        if (attempted != null) {
            return new WorkEndedTransactionException(scope, key, attempted, false, failure);
        }
        String ended = endedPast != null ? endedPast : endedNow();
        return ended == null ? null : new WorkEndedTransactionException(scope, key, ended, true, failure);
    }

    /**
     * Samples the connection's state, client-side: whether the transaction seen open before has
     * ended (auto-commit on, or none open), which only a commit or rollback past the guard does
     * (the driver's connection unwrapped). A transaction never seen open says nothing: a work whose
     * first statement failed before it was sent has none. Null while it is still open.
     */
    private @Nullable String endedNow() {
        try {
            if (raw.isClosed()) {
                return null; // a lost connection, not the work's doing: the flow reports it as such
            }
            if (raw.getAutoCommit()) {
                return "Connection.setAutoCommit(true) on the driver's own connection";
            }
        } catch (SQLException e) {
            return null;
        }
        TransactionState state = state();
        if (state == null) {
            return null;
        }
        if (state != TransactionState.IDLE) {
            sawOpen = true;
            return null;
        }
        return sawOpen ? "a COMMIT or ROLLBACK past the guard (on the driver's own connection)" : null;
    }

    private @Nullable TransactionState state() {
        try {
            if (driver == null) {
                if (!raw.isWrapperFor(BaseConnection.class)) {
                    return null;
                }
                driver = raw.unwrap(BaseConnection.class);
            }
            return driver.getTransactionState();
        } catch (SQLException e) {
            return null;
        }
    }

    /**
     * Every call of the work on the guarded connection starts here: a transaction that ended past
     * the guard since the last call is refused now, before the work goes on in a new one.
     */
    void enter() throws SQLException {
        if (endedPast == null) {
            endedPast = endedNow();
        }
        if (endedPast != null) {
            throw new SQLException(
                    "the work must not end the transaction that holds the idempotency claim, and it" + " did ("
                            + endedPast + "); refused: let the library commit",
                    INVALID_TERMINATION);
        }
    }

    /**
     * Before the driver's own connection is handed out with no transaction open yet (a work that
     * runs first, before any statement): opens one with a statement, so that a COMMIT the work then
     * sends on it is seen afterwards as the end of a transaction seen open. Otherwise a transaction
     * begun and committed on the driver's connection would leave the state as it found it, idle,
     * and its writes committed without the claim would go unnoticed. One round trip, for works that
     * unwrap the driver's connection only.
     */
    void openBeforeUnwrap() throws SQLException {
        if (sawOpen || raw.getAutoCommit() || state() != TransactionState.IDLE) {
            return;
        }
        try (Statement opening = raw.createStatement()) {
            opening.execute("select 1");
        }
        sawOpen = true;
    }

    /**
     * A call of the work that would end the transaction ({@code what}), stopped in time: noted for
     * {@link #check}, and the SQLException to throw to the work instead.
     */
    SQLException refuse(String what) {
        if (attempted == null) {
            attempted = what;
        }
        return new SQLException(
                "the work must not end the transaction that holds the idempotency claim (" + what
                        + "); refused: let the library commit",
                INVALID_TERMINATION);
    }

    /** Before the SQL of a statement of the work goes out: refused when it would end the transaction. */
    void sql(String sql) throws SQLException {
        enter();
        String verb = TransactionSql.endingVerb(sql);
        if (verb != null) {
            throw refuse("the statement '" + verb + "'");
        }
    }

    /** jOOQ's (3.19 to 3.21) data key under which DefaultTransactionProvider keeps its transaction's connection. */
    private static final String TRANSACTION_CONNECTION_KEY = "DATA_DEFAULT_TRANSACTION_PROVIDER_CONNECTION";

    /**
     * The work's {@code tx}: {@code configuration} bound to the unit's connection as this guard
     * hands it to the work; a nested {@code tx.transaction(...)} is a savepoint. Both front doors'
     * works and local writes get theirs here.
     */
    public DSLContext context(Configuration configuration) {
        Connection connection = connection();
        DefaultConnectionProvider unit = new DefaultConnectionProvider(connection);
        Configuration derived = configuration.derive(unit);
        derived.set(new NestedTransactionProvider(connection));
        // derive() keeps a ThreadLocalTransactionProvider, and jOOQ then puts its thread-local
        // connection provider in place of the one given: outside a jOOQ transaction that hands each of
        // the work's statements a pooled connection of its own, committing (or never committing) apart
        // from the claim. Set after the transaction provider, the unit's connection stays.
        derived.set(unit);
        // Inside a jOOQ transaction (DefaultTransactionProvider) the configuration answers
        // connectionProvider() with the transaction's own provider, kept in its data under this key,
        // which derive() copies: the work would get the raw connection, past the guard.
        for (Map.Entry<Object, Object> e : derived.data().entrySet()) {
            if (e.getKey() instanceof Enum<?> k && k.name().equals(TRANSACTION_CONNECTION_KEY)) {
                e.setValue(unit);
            }
        }
        return derived.dsl();
    }
}
