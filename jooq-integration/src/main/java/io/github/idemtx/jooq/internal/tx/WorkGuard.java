package io.github.idemtx.jooq.internal.tx;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.WorkEndedTransactionException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Array;
import java.sql.Blob;
import java.sql.CallableStatement;
import java.sql.Clob;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.NClob;
import java.sql.PreparedStatement;
import java.sql.SQLClientInfoException;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.SQLXML;
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Struct;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Executor;
import org.jooq.Configuration;
import org.jooq.DSLContext;
import org.jooq.impl.DefaultConnectionProvider;
import org.jspecify.annotations.Nullable;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

/**
 * Keeps a work (or an effect's local writes) from ending the transaction it was handed, at no round
 * trip: the work's {@code tx} sees {@link #connection()}, which refuses {@code commit()},
 * {@code rollback()}, {@code setAutoCommit(true)}, {@code close()} and {@code abort} and every
 * statement that starts with COMMIT, END, ROLLBACK (not ROLLBACK TO), ABORT or PREPARE TRANSACTION
 * (each part of a multi-statement string too) before it goes out; afterwards {@link #check} reads
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
        this.guarded = new Guarded();
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
    private void enter() throws SQLException {
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
    private void openBeforeUnwrap() throws SQLException {
        if (sawOpen || raw.getAutoCommit() || state() != TransactionState.IDLE) {
            return;
        }
        try (Statement opening = raw.createStatement()) {
            opening.execute("select 1");
        }
        sawOpen = true;
    }

    private SQLException refuse(String what) {
        if (attempted == null) {
            attempted = what;
        }
        return new SQLException(
                "the work must not end the transaction that holds the idempotency claim (" + what
                        + "); refused: let the library commit",
                INVALID_TERMINATION);
    }

    private void sql(String sql) throws SQLException {
        enter();
        String verb = endingVerb(sql);
        if (verb != null) {
            throw refuse("the statement '" + verb + "'");
        }
    }

    /**
     * The transaction-ending command some statement of {@code sql} starts with (lower case, e.g.
     * "commit"), or null. Semicolons inside quotes, dollar quotes and comments do not split.
     */
    public static @Nullable String endingVerb(@Nullable String sql) {
        if (sql == null) {
            return null;
        }
        if (sql.indexOf(';') < 0) {
            return verbAt(sql, skipBlank(sql, 0)); // one statement (the usual case): its first word alone
        }
        int n = sql.length();
        int i = 0;
        while (i < n) {
            i = skipBlank(sql, i);
            String verb = verbAt(sql, i);
            if (verb != null) {
                return verb;
            }
            i = nextStatement(sql, i);
        }
        return null;
    }

    private static @Nullable String verbAt(String sql, int i) {
        if (i >= sql.length()) {
            return null;
        }
        switch (Character.toLowerCase(sql.charAt(i))) {
            case 'c', 'e', 'a', 'r', 'p' -> {} // commit, end, abort, rollback, prepare
            default -> {
                return null; // select, insert, update, with, ...: no word to cut out and compare
            }
        }
        String word = word(sql, i);
        return switch (word) {
            case "commit", "end", "abort" -> word;
            case "rollback" -> {
                int j = skipBlank(sql, i + word.length());
                String next = word(sql, j);
                if (next.equals("work") || next.equals("transaction")) {
                    j = skipBlank(sql, j + next.length());
                    next = word(sql, j);
                }
                if (next.equals("to")) {
                    yield null; // ROLLBACK TO SAVEPOINT: the work's own savepoint
                }
                if (next.equals("prepared")) {
                    yield null; // fails inside a transaction block anyway
                }
                yield word;
            }
            case "prepare" -> {
                int j = skipBlank(sql, i + word.length());
                yield word(sql, j).equals("transaction") ? "prepare transaction" : null;
            }
            default -> null;
        };
    }

    private static String word(String sql, int i) {
        int j = i;
        while (j < sql.length() && Character.isLetter(sql.charAt(j))) {
            j++;
        }
        return sql.substring(i, j).toLowerCase(Locale.ROOT);
    }

    /** Skips white space and comments from {@code i}. */
    private static int skipBlank(String sql, int i) {
        int n = sql.length();
        while (i < n) {
            char c = sql.charAt(i);
            if (Character.isWhitespace(c) || c == '(') {
                i++;
            } else if (c == '-' && i + 1 < n && sql.charAt(i + 1) == '-') {
                i = endOfLineComment(sql, i);
            } else if (c == '/' && i + 1 < n && sql.charAt(i + 1) == '*') {
                i = endOfBlockComment(sql, i);
            } else {
                return i;
            }
        }
        return i;
    }

    /** The index past a {@code --} comment at {@code i}: the server ends it at a line feed or a carriage return. */
    private static int endOfLineComment(String sql, int i) {
        int n = sql.length();
        while (i < n && sql.charAt(i) != '\n' && sql.charAt(i) != '\r') {
            i++;
        }
        return i;
    }

    /** The index past the closing quote of an {@code E'...'} string whose body starts at {@code i}. */
    private static int endOfEscapeString(String sql, int i) {
        int n = sql.length();
        while (i < n) {
            char c = sql.charAt(i);
            if (c == '\\') {
                i += 2;
            } else if (c == '\'') {
                if (i + 1 < n && sql.charAt(i + 1) == '\'') {
                    i += 2; // a doubled quote inside
                } else {
                    return i + 1;
                }
            } else {
                i++;
            }
        }
        return n;
    }

    private static boolean isIdentifierPart(char c) {
        return Character.isLetterOrDigit(c) || c == '_' || c == '$';
    }

    private static int endOfBlockComment(String sql, int i) {
        int depth = 0;
        int n = sql.length();
        while (i < n) {
            if (sql.startsWith("/*", i)) {
                depth++;
                i += 2;
            } else if (sql.startsWith("*/", i)) {
                depth--;
                i += 2;
                if (depth == 0) {
                    return i;
                }
            } else {
                i++;
            }
        }
        return n;
    }

    /** The index just past the next top-level semicolon from {@code i}, or the end. */
    private static int nextStatement(String sql, int i) {
        int n = sql.length();
        while (i < n) {
            char c = sql.charAt(i);
            if (c == ';') {
                return i + 1;
            } else if (c == '\''
                    && i > 0
                    && (sql.charAt(i - 1) == 'E' || sql.charAt(i - 1) == 'e')
                    && (i < 2 || !isIdentifierPart(sql.charAt(i - 2)))) {
                i = endOfEscapeString(sql, i + 1); // E'...': a backslash escapes the next character
            } else if (c == '\'' || c == '"') {
                int close = sql.indexOf(c, i + 1);
                i = close < 0 ? n : close + 1; // a doubled quote closes and reopens: the same
            } else if (c == '-' && i + 1 < n && sql.charAt(i + 1) == '-') {
                i = endOfLineComment(sql, i);
            } else if (c == '$' && i > 0 && isIdentifierPart(sql.charAt(i - 1))) {
                i++; // inside an identifier (a$b), not a dollar quote
            } else if (c == '/' && i + 1 < n && sql.charAt(i + 1) == '*') {
                i = endOfBlockComment(sql, i);
            } else if (c == '$') {
                int tagEnd = i + 1;
                while (tagEnd < n && (Character.isLetterOrDigit(sql.charAt(tagEnd)) || sql.charAt(tagEnd) == '_')) {
                    tagEnd++;
                }
                if (tagEnd < n
                        && sql.charAt(tagEnd) == '$'
                        && (tagEnd == i + 1 || !Character.isDigit(sql.charAt(i + 1)))) {
                    String tag = sql.substring(i, tagEnd + 1);
                    int close = sql.indexOf(tag, tagEnd + 1);
                    i = close < 0 ? n : close + tag.length();
                } else {
                    i = tagEnd; // a parameter such as $1
                }
            } else {
                i++;
            }
        }
        return n;
    }

    /** A statement handed out by {@code createStatement()}: its SQL arrives only when it runs. */
    private Statement statement(Statement delegate) {
        InvocationHandler handler = (proxy, method, args) -> {
            String name = method.getName();
            if (args != null
                    && args.length > 0
                    && args[0] instanceof String sql
                    && (name.startsWith("execute") || name.equals("addBatch"))) {
                sql(sql);
            }
            if (name.equals("getConnection") && method.getParameterCount() == 0) {
                return guarded;
            }
            try {
                return method.invoke(delegate, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        return (Statement)
                Proxy.newProxyInstance(WorkGuard.class.getClassLoader(), new Class<?>[] {Statement.class}, handler);
    }

    /** The work's view of the connection: everything delegated, the ends of the transaction refused. */
    private final class Guarded implements Connection {

        @Override
        public Statement createStatement() throws SQLException {
            enter();
            return statement(raw.createStatement());
        }

        @Override
        public Statement createStatement(int type, int concurrency) throws SQLException {
            enter();
            return statement(raw.createStatement(type, concurrency));
        }

        @Override
        public Statement createStatement(int type, int concurrency, int holdability) throws SQLException {
            enter();
            return statement(raw.createStatement(type, concurrency, holdability));
        }

        @Override
        public PreparedStatement prepareStatement(String sql) throws SQLException {
            sql(sql);
            return raw.prepareStatement(sql);
        }

        @Override
        public PreparedStatement prepareStatement(String sql, int type, int concurrency) throws SQLException {
            sql(sql);
            return raw.prepareStatement(sql, type, concurrency);
        }

        @Override
        public PreparedStatement prepareStatement(String sql, int type, int concurrency, int holdability)
                throws SQLException {
            sql(sql);
            return raw.prepareStatement(sql, type, concurrency, holdability);
        }

        @Override
        public PreparedStatement prepareStatement(String sql, int autoGeneratedKeys) throws SQLException {
            sql(sql);
            return raw.prepareStatement(sql, autoGeneratedKeys);
        }

        @Override
        public PreparedStatement prepareStatement(String sql, int[] columnIndexes) throws SQLException {
            sql(sql);
            return raw.prepareStatement(sql, columnIndexes);
        }

        @Override
        public PreparedStatement prepareStatement(String sql, String[] columnNames) throws SQLException {
            sql(sql);
            return raw.prepareStatement(sql, columnNames);
        }

        @Override
        public CallableStatement prepareCall(String sql) throws SQLException {
            sql(sql);
            return raw.prepareCall(sql);
        }

        @Override
        public CallableStatement prepareCall(String sql, int type, int concurrency) throws SQLException {
            sql(sql);
            return raw.prepareCall(sql, type, concurrency);
        }

        @Override
        public CallableStatement prepareCall(String sql, int type, int concurrency, int holdability)
                throws SQLException {
            sql(sql);
            return raw.prepareCall(sql, type, concurrency, holdability);
        }

        @Override
        public String nativeSQL(String sql) throws SQLException {
            return raw.nativeSQL(sql);
        }

        @Override
        public void setAutoCommit(boolean autoCommit) throws SQLException {
            enter();
            if (autoCommit) {
                throw refuse("Connection.setAutoCommit(true)");
            }
            raw.setAutoCommit(false); // already off: a no-op
        }

        @Override
        public boolean getAutoCommit() throws SQLException {
            return raw.getAutoCommit();
        }

        @Override
        public void commit() throws SQLException {
            throw refuse("Connection.commit()");
        }

        @Override
        public void rollback() throws SQLException {
            throw refuse("Connection.rollback()");
        }

        @Override
        public void rollback(Savepoint savepoint) throws SQLException {
            enter();
            raw.rollback(savepoint);
        }

        @Override
        public void close() throws SQLException {
            throw refuse("Connection.close()");
        }

        @Override
        public void abort(Executor executor) throws SQLException {
            throw refuse("Connection.abort(...)");
        }

        @Override
        public boolean isClosed() throws SQLException {
            return raw.isClosed();
        }

        @Override
        public DatabaseMetaData getMetaData() throws SQLException {
            enter();
            return raw.getMetaData();
        }

        @Override
        public void setReadOnly(boolean readOnly) throws SQLException {
            raw.setReadOnly(readOnly);
        }

        @Override
        public boolean isReadOnly() throws SQLException {
            return raw.isReadOnly();
        }

        @Override
        public void setCatalog(String catalog) throws SQLException {
            raw.setCatalog(catalog);
        }

        @Override
        public String getCatalog() throws SQLException {
            return raw.getCatalog();
        }

        @Override
        public void setTransactionIsolation(int level) throws SQLException {
            raw.setTransactionIsolation(level);
        }

        @Override
        public int getTransactionIsolation() throws SQLException {
            return raw.getTransactionIsolation();
        }

        @Override
        public SQLWarning getWarnings() throws SQLException {
            return raw.getWarnings();
        }

        @Override
        public void clearWarnings() throws SQLException {
            raw.clearWarnings();
        }

        @Override
        public Map<String, Class<?>> getTypeMap() throws SQLException {
            return raw.getTypeMap();
        }

        @Override
        public void setTypeMap(Map<String, Class<?>> map) throws SQLException {
            raw.setTypeMap(map);
        }

        @Override
        public void setHoldability(int holdability) throws SQLException {
            raw.setHoldability(holdability);
        }

        @Override
        public int getHoldability() throws SQLException {
            return raw.getHoldability();
        }

        @Override
        public Savepoint setSavepoint() throws SQLException {
            enter();
            return raw.setSavepoint();
        }

        @Override
        public Savepoint setSavepoint(String name) throws SQLException {
            enter();
            return raw.setSavepoint(name);
        }

        @Override
        public void releaseSavepoint(Savepoint savepoint) throws SQLException {
            enter();
            raw.releaseSavepoint(savepoint);
        }

        @Override
        public Clob createClob() throws SQLException {
            return raw.createClob();
        }

        @Override
        public Blob createBlob() throws SQLException {
            return raw.createBlob();
        }

        @Override
        public NClob createNClob() throws SQLException {
            return raw.createNClob();
        }

        @Override
        public SQLXML createSQLXML() throws SQLException {
            return raw.createSQLXML();
        }

        @Override
        public boolean isValid(int timeout) throws SQLException {
            return raw.isValid(timeout);
        }

        @Override
        public void setClientInfo(String name, String value) throws SQLClientInfoException {
            raw.setClientInfo(name, value);
        }

        @Override
        public void setClientInfo(Properties properties) throws SQLClientInfoException {
            raw.setClientInfo(properties);
        }

        @Override
        public String getClientInfo(String name) throws SQLException {
            return raw.getClientInfo(name);
        }

        @Override
        public Properties getClientInfo() throws SQLException {
            return raw.getClientInfo();
        }

        @Override
        public Array createArrayOf(String typeName, Object[] elements) throws SQLException {
            return raw.createArrayOf(typeName, elements);
        }

        @Override
        public Struct createStruct(String typeName, Object[] attributes) throws SQLException {
            return raw.createStruct(typeName, attributes);
        }

        @Override
        public void setSchema(String schema) throws SQLException {
            raw.setSchema(schema);
        }

        @Override
        public String getSchema() throws SQLException {
            return raw.getSchema();
        }

        @Override
        public void setNetworkTimeout(Executor executor, int milliseconds) throws SQLException {
            raw.setNetworkTimeout(executor, milliseconds);
        }

        @Override
        public int getNetworkTimeout() throws SQLException {
            return raw.getNetworkTimeout();
        }

        @Override
        public <W> W unwrap(Class<W> iface) throws SQLException {
            if (iface.isInstance(this)) {
                return iface.cast(this);
            }
            enter(); // the driver's own connection runs statements the guard does not see: note the state now
            openBeforeUnwrap();
            return raw.unwrap(iface);
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) throws SQLException {
            return iface.isInstance(this) || raw.isWrapperFor(iface);
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
