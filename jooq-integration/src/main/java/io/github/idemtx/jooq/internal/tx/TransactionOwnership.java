package io.github.idemtx.jooq.internal.tx;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.TransactionOwnershipException;
import io.github.idemtx.jooq.TransactionDetector;
import io.github.idemtx.jooq.TransactionDetector.Detection;
import io.github.idemtx.jooq.TransactionMode;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import org.jooq.Configuration;
import org.jooq.ConnectionProvider;
import org.jooq.impl.DataSourceConnectionProvider;
import org.jooq.impl.DefaultConnectionProvider;
import org.jspecify.annotations.Nullable;

/**
 * Decides, for one call, whether it owns its transaction or joins the caller's: from the stated
 * {@link TransactionMode}, the detectors' answers and the kind of connection provider, never from
 * the connection's transaction state. Where it cannot tell, it refuses with a message naming the
 * fix. Immutable and thread-safe.
 */
public final class TransactionOwnership {

    /** Who ends the transaction. */
    public enum Decision {
        /** The library: its own transaction, committed before {@code run} returns. */
        OWN,
        /** The caller: the call works in a savepoint of the caller's transaction. */
        JOIN
    }

    private static final String SPRING = "org.springframework.";

    private final TransactionMode mode;
    private final List<TransactionDetector> detectors;
    private final String ownBecause;
    private final String ownFix;

    /**
     * @param explicit detectors set on the builder, asked first
     */
    public TransactionOwnership(TransactionMode mode, List<TransactionDetector> explicit) {
        this(mode, explicit, "transactionMode is OWN", "use DETECT or JOIN");
    }

    /**
     * For a caller that can only own its transactions ({@link TransactionMode#OWN}), with the reason
     * and the fix its refusals name.
     *
     * @param ownBecause why it owns, e.g. "an external effect commits in transactions of its own"
     * @param ownFix what the caller should do instead
     */
    public static TransactionOwnership ownOnly(List<TransactionDetector> explicit, String ownBecause, String ownFix) {
        return new TransactionOwnership(TransactionMode.OWN, explicit, ownBecause, ownFix);
    }

    private TransactionOwnership(
            TransactionMode mode, List<TransactionDetector> explicit, String ownBecause, String ownFix) {
        this.mode = mode;
        this.ownBecause = ownBecause;
        this.ownFix = ownFix;
        List<TransactionDetector> all = new ArrayList<>(explicit);
        ServiceLoader.load(TransactionDetector.class, TransactionOwnership.class.getClassLoader())
                .forEach(all::add);
        all.add(new JooqTransactionDetector());
        this.detectors = List.copyOf(all);
    }

    public TransactionMode mode() {
        return mode;
    }

    /** The detectors in the order they are asked; the last is jOOQ's. */
    public List<TransactionDetector> detectors() {
        return detectors;
    }

    /**
     * What the detectors said: the first answer that is not UNKNOWN, and who gave it (for messages).
     *
     * @param detector the detector that answered, or null when none did
     */
    public record Detected(Detection answer, @Nullable TransactionDetector detector) {

        /** The answering detector's class name, or "no detector". */
        public String by() {
            return detector == null ? "no detector" : detector.getClass().getName();
        }

        /** What pushes out the joined transaction's in-memory writes: the answering detector's flush. */
        public Runnable flusher(Configuration configuration) {
            return detector == null ? () -> {} : () -> detector.flush(configuration);
        }
    }

    /** What the detectors say about {@code configuration} on this thread. */
    public Detected detect(Configuration configuration) {
        for (TransactionDetector d : detectors) {
            Detection answer = d.detect(configuration);
            if (answer == null) {
                throw new IllegalStateException(d.getClass().getName() + ".detect returned null");
            }
            if (answer != Detection.UNKNOWN) {
                return new Detected(answer, d);
            }
        }
        return new Detected(Detection.UNKNOWN, null);
    }

    /**
     * Decides for {@code connection}, which {@code configuration}'s provider handed out; throws
     * {@link TransactionOwnershipException} (scope and key may be null, for a purge) when it cannot.
     */
    public Decision decide(
            Configuration configuration,
            Detected detected,
            Connection connection,
            @Nullable Scope scope,
            @Nullable IdempotencyKey key) {
        ConnectionProvider provider = configuration.connectionProvider();
        boolean bound = provider instanceof DefaultConnectionProvider;
        boolean autoCommit = Jdbc.autoCommit(connection);
        if (Jdbc.readOnly(connection)) {
            throw refuse(
                    scope,
                    key,
                    "the connection is read-only (a read-only transaction, or a pool set to readOnly):"
                            + " the claim and the result must be written; run it in a read-write transaction");
        }
        return switch (mode) {
            case OWN -> {
                if (detected.answer() == Detection.ACTIVE) {
                    throw refuse(
                            scope,
                            key,
                            ownBecause + " but a transaction of the caller is open" + " (" + detected.by()
                                    + "): committing would split it; " + ownFix);
                }
                if (bound && !autoCommit) {
                    throw refuse(
                            scope,
                            key,
                            ownBecause + " but the DSLContext is bound to a connection whose"
                                    + " transaction the caller manages (auto-commit off): committing would split it; "
                                    + ownFix
                                    + ", or give a DSLContext over a DataSource");
                }
                yield Decision.OWN;
            }
            case JOIN -> {
                if (detected.answer() == Detection.NONE) {
                    throw refuse(
                            scope,
                            key,
                            "transactionMode is JOIN but no transaction is open (" + detected.by()
                                    + "): open one around the call, or use DETECT");
                }
                if (autoCommit) {
                    throw refuse(
                            scope,
                            key,
                            "transactionMode is JOIN but the connection the DSLContext hands out is"
                                    + " in auto-commit mode, so no transaction is open to join: open one around the call, or"
                                    + " use DETECT");
                }
                yield Decision.JOIN;
            }
            default -> detect(configuration, detected, provider, bound, autoCommit, scope, key);
        };
    }

    private Decision detect(
            Configuration configuration,
            Detected detected,
            ConnectionProvider provider,
            boolean bound,
            boolean autoCommit,
            @Nullable Scope scope,
            @Nullable IdempotencyKey key) {
        if (detected.answer() == Detection.ACTIVE) {
            if (autoCommit) {
                throw refuse(
                        scope,
                        key,
                        detected.by() + " reports an open transaction, but the"
                                + " connection the DSLContext hands out is in auto-commit mode: its connection provider does"
                                + " not return that transaction's connection");
            }
            return Decision.JOIN;
        }
        if (bound) {
            // DSL.using(connection), or a configuration bound to one connection: the caller manages it
            if (autoCommit) {
                return Decision.OWN;
            }
            if (detected.answer() == Detection.NONE) {
                throw refuse(
                        scope,
                        key,
                        detected.by() + " reports no open transaction, but the DSLContext"
                                + " is bound to a connection with auto-commit off: state transactionMode OWN or JOIN");
            }
            return Decision.JOIN;
        }
        if (detected.answer() == Detection.NONE || autoCommit) {
            // a connection in auto-commit mode has no transaction open that anybody owns
            return Decision.OWN;
        }
        if (springManaged(configuration)) {
            throw refuse(
                    scope,
                    key,
                    "this DSLContext's transactions are managed by Spring, and no TransactionDetector"
                            + " for Spring is on the class path, so a Spring transaction that has sent no statement yet cannot"
                            + " be told from a pooled connection: add the idemtx Spring module, or state transactionMode JOIN"
                            + " (inside transactions) or OWN (outside them) on the builder");
        }
        if (provider instanceof DataSourceConnectionProvider) {
            // a fresh connection from the DataSource (a pool with auto-commit off): nobody else's transaction
            return Decision.OWN;
        }
        if (provider.getClass().getName().startsWith("org.jooq.impl.ThreadLocalTransactionProvider")
                && !JooqTransactionDetector.seesThreadLocalTransactions()) {
            throw refuse(
                    scope,
                    key,
                    "jOOQ's ThreadLocalTransactionProvider does not show whether a transaction is open"
                            + " here (run with --add-opens org.jooq/org.jooq.impl=ALL-UNNAMED, or the library's module name),"
                            + " and the connection has auto-commit off: state transactionMode JOIN or OWN on the builder");
        }
        throw refuse(
                scope,
                key,
                "cannot tell whether the connection from " + provider.getClass().getName()
                        + " (auto-commit off) belongs to a caller's transaction: state transactionMode OWN (it hands out"
                        + " fresh pooled connections) or JOIN (it hands out the caller's transaction's connection) on the"
                        + " builder, or register a TransactionDetector for its transaction manager");
    }

    private static boolean springManaged(Configuration configuration) {
        if (configuration.transactionProvider().getClass().getName().startsWith(SPRING)) {
            return true;
        }
        if (configuration.connectionProvider() instanceof DataSourceConnectionProvider ds) {
            for (Class<?> c = ds.dataSource().getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
                if (c.getName().startsWith(SPRING) && c.getSimpleName().startsWith("TransactionAware")) {
                    return true;
                }
            }
        }
        return false;
    }

    private static TransactionOwnershipException refuse(
            @Nullable Scope scope, @Nullable IdempotencyKey key, String why) {
        return new TransactionOwnershipException(scope, key, "refused before running anything: " + why);
    }
}
