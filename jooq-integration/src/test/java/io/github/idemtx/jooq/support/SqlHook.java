package io.github.idemtx.jooq.support;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.jooq.ConnectionProvider;
import org.jooq.DSLContext;
import org.jooq.impl.DSL;

/**
 * Sees, and may fail, every statement sent on the connections of a {@code DSLContext}: the work's
 * (which jOOQ executes) and the library's claim statements (which run as plain JDBC), at the JDBC
 * level where both pass. A hook that throws an {@link SQLException} fails the statement the way the
 * driver would. Hooks must be thread-safe.
 *
 * <p>Not seen: batches, callable statements, and the connection's own commit, rollback and
 * savepoint calls. The hooked context's connection provider is not a {@code DefaultConnectionProvider},
 * so {@code run} on it joins a caller's transaction only when one is open on the connection.
 */
public interface SqlHook {

    /** One execution: the connection underneath the hooked one (a hook's own statements on it are not hooked), the SQL and its parameters. */
    public record Sql(Connection connection, String sql, Map<Integer, Object> parameters) {
        /** The parameter at {@code index} (1-based), as the statement was given it. */
        Object parameter(int index) {
            return parameters.get(index);
        }
    }

    /** Before the statement is sent; throw to fail it unsent. */
    public default void before(Sql sql) throws SQLException {}

    /** After it ran without error; throw to fail it as if its answer had been an error. */
    public default void after(Sql sql) throws SQLException {}

    /** The driver reported {@code error} for it. */
    public default void failed(Sql sql, SQLException error) {}

    /** {@code base} with its connections hooked. */
    public static DSLContext around(DSLContext base, SqlHook... hooks) {
        ConnectionProvider inner = base.configuration().connectionProvider();
        List<SqlHook> all = List.of(hooks);
        Map<Connection, Connection> real = Collections.synchronizedMap(new IdentityHashMap<>());
        ConnectionProvider hooked = new ConnectionProvider() {
            @Override
            public Connection acquire() {
                Connection connection = inner.acquire();
                Connection proxy = Hooked.connection(connection, all);
                real.put(proxy, connection);
                return proxy;
            }

            @Override
            public void release(Connection connection) {
                Connection original = real.remove(connection);
                inner.release(original != null ? original : connection);
            }
        };
        return DSL.using(base.configuration().derive(hooked));
    }

    /** The proxies behind {@link #around}. */
    public final class Hooked {
        private Hooked() {}

        static Connection connection(Connection connection, List<SqlHook> hooks) {
            InvocationHandler handler = new InvocationHandler() {
                @Override
                public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
                    Object identity = identity(proxy, method, args);
                    if (identity != null) {
                        return identity;
                    }
                    Object result = call(connection, method, args);
                    if (result instanceof PreparedStatement ps
                            && method.getName().equals("prepareStatement")) {
                        return statement(
                                PreparedStatement.class, ps, (Connection) proxy, connection, (String) args[0], hooks);
                    }
                    if (result instanceof Statement s && method.getName().equals("createStatement")) {
                        return statement(Statement.class, s, (Connection) proxy, connection, null, hooks);
                    }
                    return result;
                }
            };
            return (Connection)
                    Proxy.newProxyInstance(SqlHook.class.getClassLoader(), new Class<?>[] {Connection.class}, handler);
        }

        private static <S extends Statement> S statement(
                Class<S> type,
                S statement,
                Connection proxyConnection,
                Connection connection,
                String preparedSql,
                List<SqlHook> hooks) {
            Map<Integer, Object> parameters = new TreeMap<>();
            InvocationHandler handler = (proxy, method, args) -> {
                String name = method.getName();
                Object identity = identity(proxy, method, args);
                if (identity != null) {
                    return identity;
                }
                if (name.equals("getConnection")) {
                    return proxyConnection;
                }
                if (name.startsWith("set") && args != null && args.length >= 2 && args[0] instanceof Integer index) {
                    parameters.put(index, name.equals("setNull") ? null : args[1]);
                } else if (name.equals("clearParameters")) {
                    parameters.clear();
                }
                if (!name.startsWith("execute") || name.endsWith("Batch")) {
                    return call(statement, method, args);
                }
                String text = preparedSql != null ? preparedSql : (String) args[0];
                Sql sql = new Sql(connection, text, Collections.unmodifiableMap(new TreeMap<>(parameters)));
                for (SqlHook hook : hooks) {
                    hook.before(sql);
                }
                Object result;
                try {
                    result = call(statement, method, args);
                } catch (SQLException e) {
                    for (SqlHook hook : hooks) {
                        hook.failed(sql, e);
                    }
                    throw e;
                }
                for (SqlHook hook : hooks) {
                    hook.after(sql);
                }
                return result;
            };
            return type.cast(Proxy.newProxyInstance(SqlHook.class.getClassLoader(), new Class<?>[] {type}, handler));
        }

        /** equals and hashCode by the proxy's identity; null for every other method. */
        private static Object identity(Object proxy, Method method, Object[] args) {
            if (method.getName().equals("equals") && args != null && args.length == 1) {
                return proxy == args[0];
            }
            if (method.getName().equals("hashCode") && (args == null || args.length == 0)) {
                return System.identityHashCode(proxy);
            }
            return null;
        }

        private static Object call(Object target, Method method, Object[] args) throws Throwable {
            try {
                return method.invoke(target, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }
    }
}
