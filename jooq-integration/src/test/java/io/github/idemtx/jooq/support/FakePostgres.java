package io.github.idemtx.jooq.support;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A loopback server that speaks just enough of PostgreSQL's wire protocol to be what a test needs:
 * one that refuses every login with a given SQLSTATE (a wrong password, a missing database), or one
 * that lets everyone in and reports a given {@code server_version} (an old server), answering every
 * statement with an error and counting them, so a test can show that nothing was sent.
 */
public final class FakePostgres implements AutoCloseable {

    private final ServerSocket socket;
    private final Thread acceptor;
    private final String refusalState;
    private final String refusalMessage;
    private final String serverVersion;
    private final AtomicInteger statements = new AtomicInteger();

    private FakePostgres(String refusalState, String refusalMessage, String serverVersion) throws IOException {
        this.refusalState = refusalState;
        this.refusalMessage = refusalMessage;
        this.serverVersion = serverVersion;
        this.socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.acceptor = Thread.ofVirtual().name("fake-postgres").start(this::accept);
    }

    /** A server that refuses every login with {@code state} and {@code message}, as a FATAL error. */
    public static FakePostgres refusing(String state, String message) throws IOException {
        return new FakePostgres(state, message, null);
    }

    /** A server that lets everyone in and says it runs {@code version} (e.g. {@code 13.4}). */
    public static FakePostgres reporting(String version) throws IOException {
        return new FakePostgres(null, null, version);
    }

    public String url() {
        return "jdbc:postgresql://127.0.0.1:" + socket.getLocalPort() + "/fake";
    }

    /** How many statements (simple or extended queries) clients sent after logging in. */
    public int statements() {
        return statements.get();
    }

    private void accept() {
        while (!socket.isClosed()) {
            try {
                Socket client = socket.accept();
                Thread.ofVirtual().start(() -> serve(client));
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    private void serve(Socket client) {
        try (client;
                InputStream rawIn = client.getInputStream();
                OutputStream rawOut = client.getOutputStream()) {
            DataInputStream in = new DataInputStream(rawIn);
            DataOutputStream out = new DataOutputStream(rawOut);
            while (true) {
                int length = in.readInt();
                int code = in.readInt();
                in.skipNBytes(length - 8);
                if (code == 80877103 || code == 80877104) { // SSLRequest, GSSENCRequest: not here
                    out.writeByte('N');
                    out.flush();
                    continue;
                }
                break; // the startup message
            }
            if (refusalState != null) {
                error(out, "FATAL", refusalState, refusalMessage);
                out.flush();
                return;
            }
            message(out, 'R', new byte[] {0, 0, 0, 0}); // AuthenticationOk
            parameter(out, "server_version", serverVersion);
            parameter(out, "server_encoding", "UTF8");
            parameter(out, "client_encoding", "UTF8");
            parameter(out, "DateStyle", "ISO, MDY");
            parameter(out, "integer_datetimes", "on");
            parameter(out, "standard_conforming_strings", "on");
            parameter(out, "TimeZone", "UTC");
            message(out, 'K', new byte[] {0, 0, 0, 1, 0, 0, 0, 2}); // BackendKeyData
            message(out, 'Z', new byte[] {'I'}); // ReadyForQuery
            out.flush();
            String pending = null; // the extended protocol's statement, answered at its Sync
            while (true) {
                int type = in.read();
                if (type < 0 || type == 'X') {
                    return;
                }
                int length = in.readInt();
                byte[] body = in.readNBytes(length - 4);
                if (type == 'P') {
                    String rest = new String(body, StandardCharsets.UTF_8);
                    rest = rest.substring(rest.indexOf('\0') + 1);
                    pending = rest.substring(0, rest.indexOf('\0'));
                } else if (type == 'Q' || type == 'S') { // a simple query, or the Sync that ends an extended one
                    String sql = type == 'Q' ? new String(body, 0, body.length - 1, StandardCharsets.UTF_8) : pending;
                    pending = null;
                    if (sql != null
                            && sql.trim().toUpperCase(java.util.Locale.ROOT).startsWith("SET ")) {
                        // the driver's own session set-up on connecting: not a statement of the code under test
                        message(out, 'C', "SET\0".getBytes(StandardCharsets.UTF_8));
                    } else {
                        statements.incrementAndGet();
                        error(out, "ERROR", "XX000", "the fake server runs no statement: " + sql);
                    }
                    message(out, 'Z', new byte[] {'I'});
                    out.flush();
                }
            }
        } catch (IOException e) {
            // the client went away
        }
    }

    private static void parameter(DataOutputStream out, String name, String value) throws IOException {
        message(out, 'S', (name + "\0" + value + "\0").getBytes(StandardCharsets.UTF_8));
    }

    private static void error(DataOutputStream out, String severity, String state, String text) throws IOException {
        String fields = "S" + severity + "\0V" + severity + "\0C" + state + "\0M" + text + "\0\0";
        message(out, 'E', fields.getBytes(StandardCharsets.UTF_8));
    }

    private static void message(DataOutputStream out, char type, byte[] body) throws IOException {
        out.writeByte(type);
        out.writeInt(body.length + 4);
        out.write(body);
    }

    @Override
    public void close() throws IOException {
        socket.close();
        acceptor.interrupt();
    }
}
