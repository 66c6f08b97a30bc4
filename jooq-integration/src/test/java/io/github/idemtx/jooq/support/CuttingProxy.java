package io.github.idemtx.jooq.support;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import org.postgresql.Driver;
import org.postgresql.PGProperty;

/**
 * A TCP proxy on loopback between pgjdbc and PostgreSQL that reads the wire protocol's message
 * frames and, once armed, cuts the connection that sends the library's completion and COMMIT:
 *
 * <ul>
 *   <li>{@link Cut#BEFORE_COMMIT}: forwards the messages before the COMMIT's Parse, drops that one
 *       and everything after it, and closes both sides: the server never sees the COMMIT.
 *   <li>{@link Cut#AFTER_COMMIT}: forwards the COMMIT, then swallows the server's answer and closes
 *       both sides once the server has said ReadyForQuery: the transaction committed, the client
 *       never hears so.
 * </ul>
 *
 * The client must connect with {@code sslmode=disable} (the bytes must be readable), and pgjdbc
 * splits {@code insert ...; commit} into one Parse per statement, so the COMMIT is recognised as
 * a Parse of {@code commit} whose statement before it on the connection (in the same batch or the
 * one before, as {@code Connection.commit()} sends it) is the armed one: by default the record of
 * {@link IdempotentTransaction} (a single Parse ending in {@code ; commit} is recognised too). One
 * cut per arming.
 */
public final class CuttingProxy implements AutoCloseable {

    public enum Cut {
        BEFORE_COMMIT,
        AFTER_COMMIT
    }

    private final ServerSocket listener;
    private final InetSocketAddress target;
    private final AtomicReference<Arming> armed = new AtomicReference<>();
    private final AtomicInteger cuts = new AtomicInteger();
    private final AtomicInteger connections = new AtomicInteger();
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;
    private final String database;
    private final List<HikariDataSource> pools = new CopyOnWriteArrayList<>();
    private volatile boolean closed;

    /** A proxy in front of the test database ({@link Db#DATABASE}). */
    public static CuttingProxy toTestDatabase() throws IOException {
        Properties url = Driver.parseURL(Db.DATABASE.url(), null);
        if (url == null) {
            throw new IOException("not a PostgreSQL URL: " + Db.DATABASE.url());
        }
        return new CuttingProxy(
                PGProperty.PG_HOST.getOrDefault(url).split(",")[0],
                Integer.parseInt(PGProperty.PG_PORT.getOrDefault(url).split(",")[0]),
                PGProperty.PG_DBNAME.getOrDefault(url));
    }

    public CuttingProxy(String targetHost, int targetPort, String database) throws IOException {
        this.database = database;
        this.target = new InetSocketAddress(targetHost, targetPort);
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.acceptor = new Thread(this::accept, "proxy-accept-" + port());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    public int port() {
        return listener.getLocalPort();
    }

    /**
     * A pool of two connections to the database through this proxy, closed with it: no TLS, no GSS
     * encryption, and the SQL in every Parse, so the proxy can read it.
     */
    public HikariDataSource newPool(String name) {
        HikariDataSource pool = Db.DATABASE.newPool(2, config -> {
            config.setJdbcUrl("jdbc:postgresql://127.0.0.1:" + port() + "/" + database);
            config.setPoolName(name);
            config.addDataSourceProperty("sslmode", "disable");
            config.addDataSourceProperty("gssEncMode", "disable");
            config.addDataSourceProperty("prepareThreshold", "0");
        });
        pools.add(pool);
        return pool;
    }

    /** What to cut, and after which statement. */
    private record Arming(Cut cut, Predicate<String> after) {}

    /** Cuts the next connection that sends the completion and COMMIT, in the way given. */
    public void arm(Cut cut) {
        arm(cut, Faults::isRecord);
    }

    /** Cuts the next connection that sends a COMMIT after a statement {@code after} accepts, in the way given. */
    public void arm(Cut cut, Predicate<String> after) {
        armed.set(new Arming(cut, after));
    }

    /** Drops an arming still waiting for its COMMIT, so that it cannot cut a later test's connection. */
    public void disarm() {
        armed.set(null);
    }

    /** Whether an arming is still waiting for its COMMIT. */
    public boolean armed() {
        return armed.get() != null;
    }

    /** How many connections were cut so far. */
    public int cuts() {
        return cuts.get();
    }

    /** How many client connections the proxy accepted so far. */
    public int connections() {
        return connections.get();
    }

    private void accept() {
        while (!closed) {
            try {
                Socket client = listener.accept();
                connections.incrementAndGet();
                Socket server = new Socket();
                server.connect(target, 10_000);
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                new Link(client, server).start();
            } catch (IOException e) {
                if (!closed) {
                    System.err.println("proxy: " + e);
                }
            }
        }
    }

    /** One client connection and its server connection, pumped by two threads. */
    private final class Link {
        private final Socket client;
        private final Socket server;
        /** Set by the upstream pump when it forwarded an armed COMMIT: the downstream swallows the answer. */
        private volatile boolean swallow;

        Link(Socket client, Socket server) {
            this.client = client;
            this.server = server;
            open.add(client);
            open.add(server);
        }

        void start() {
            Thread up = new Thread(this::upstream, "proxy-up-" + client.getPort());
            Thread down = new Thread(this::downstream, "proxy-down-" + client.getPort());
            up.setDaemon(true);
            down.setDaemon(true);
            up.start();
            down.start();
        }

        private void upstream() {
            try (DataInputStream in = new DataInputStream(new BufferedInputStream(client.getInputStream()));
                    OutputStream out = new BufferedOutputStream(server.getOutputStream())) {
                // the startup message has no type byte
                int length = in.readInt();
                out.write(intBytes(length));
                copy(in, out, length - 4);
                out.flush();
                String previous = null; // the statement parsed last on this connection, since its last COMMIT
                while (true) {
                    int type = in.read();
                    if (type < 0) {
                        break;
                    }
                    length = in.readInt();
                    byte[] payload = new byte[length - 4];
                    in.readFully(payload);
                    Cut cut = null;
                    if (type == 'P') {
                        String query = parsedQuery(payload);
                        if (query.equals("commit") || query.endsWith("; commit")) {
                            Arming arming = armed.get();
                            if (arming != null
                                    && (arming.after().test(query)
                                            || previous != null
                                                    && arming.after().test(previous))
                                    && armed.compareAndSet(arming, null)) {
                                cut = arming.cut();
                            }
                            previous = null;
                        } else {
                            previous = query;
                        }
                    }
                    if (cut == Cut.BEFORE_COMMIT) {
                        out.flush(); // what came before the COMMIT reaches the server; the COMMIT never does
                        cuts.incrementAndGet();
                        cutBoth();
                        return;
                    }
                    if (cut == Cut.AFTER_COMMIT) {
                        swallow = true;
                    }
                    out.write(type);
                    out.write(intBytes(length));
                    out.write(payload);
                    if (in.available() == 0) {
                        out.flush(); // keep pgjdbc's batches together, as they came
                    }
                }
            } catch (IOException e) {
                // either side went away
            } finally {
                cutBoth();
            }
        }

        private void downstream() {
            try (DataInputStream in = new DataInputStream(new BufferedInputStream(server.getInputStream()));
                    OutputStream out = new BufferedOutputStream(client.getOutputStream())) {
                while (true) {
                    int type = in.read();
                    if (type < 0) {
                        break;
                    }
                    int length = in.readInt();
                    byte[] payload = new byte[length - 4];
                    in.readFully(payload);
                    if (swallow) {
                        if (type == 'Z') { // the server finished the batch: it committed, the client never learns
                            cuts.incrementAndGet();
                            cutBoth();
                            return;
                        }
                        continue;
                    }
                    out.write(type);
                    out.write(intBytes(length));
                    out.write(payload);
                    if (in.available() == 0) {
                        out.flush();
                    }
                }
            } catch (IOException e) {
                // either side went away
            } finally {
                cutBoth();
            }
        }

        private void cutBoth() {
            closeQuietly(client);
            closeQuietly(server);
        }
    }

    /** The query text of a Parse message: a statement name, then the query, both NUL-terminated. */
    private static String parsedQuery(byte[] payload) {
        int nameEnd = indexOfNul(payload, 0);
        int queryEnd = indexOfNul(payload, nameEnd + 1);
        return new String(payload, nameEnd + 1, queryEnd - nameEnd - 1, StandardCharsets.UTF_8)
                .strip()
                .toLowerCase(Locale.ROOT);
    }

    private static int indexOfNul(byte[] bytes, int from) {
        for (int i = from; i < bytes.length; i++) {
            if (bytes[i] == 0) {
                return i;
            }
        }
        return bytes.length;
    }

    private static byte[] intBytes(int v) {
        return new byte[] {(byte) (v >>> 24), (byte) (v >>> 16), (byte) (v >>> 8), (byte) v};
    }

    private static void copy(InputStream in, OutputStream out, int n) throws IOException {
        byte[] buffer = new byte[8192];
        while (n > 0) {
            int read = in.read(buffer, 0, Math.min(buffer.length, n));
            if (read < 0) {
                throw new EOFException();
            }
            out.write(buffer, 0, read);
            n -= read;
        }
    }

    private void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException e) {
            // closing anyway
        }
        open.remove(socket);
    }

    @Override
    public void close() throws IOException {
        pools.forEach(HikariDataSource::close);
        closed = true;
        listener.close();
        for (Socket s : open) {
            closeQuietly(s);
        }
    }
}
