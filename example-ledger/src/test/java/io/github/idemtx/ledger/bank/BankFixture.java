package io.github.idemtx.ledger.bank;

import io.github.idemtx.db.testing.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;

/**
 * A bank on the test database in a schema of its own ({@code <this JVM's schema>_<suffix>}, one per
 * test class: the module's tests run in two JVMs at once), and HTTP and SQL helpers around it.
 */
public final class BankFixture {

    static final HttpClient HTTP = HttpClient.newHttpClient();

    private BankFixture() {}

    /** The schema a bank of this suffix keeps its tables in. */
    public static String schema(String suffix) {
        return TestDatabase.get().schema() + "_" + suffix;
    }

    /** Starts a bank on a free port in a fresh schema of this suffix, with more flags. */
    public static BankServer start(String suffix, String... more) throws Exception {
        TestDatabase db = TestDatabase.get();
        List<String> args = new ArrayList<>(List.of(
                "--port=0",
                "--fresh=true",
                "--schema=" + schema(suffix),
                "--db-url=" + db.serverUrl(),
                "--db-user=" + (db.user() == null ? "postgres" : db.user())));
        if (db.password() != null) {
            args.add("--db-password=" + db.password());
        }
        args.addAll(List.of(more));
        return BankServer.start(args.toArray(String[]::new));
    }

    public static void drop(String suffix) {
        TestDatabase.get().execute("DROP SCHEMA IF EXISTS " + schema(suffix) + " CASCADE");
    }

    static HttpResponse<String> send(BankServer bank, String method, String path, String body) throws Exception {
        return HTTP.send(request(bank, method, path, body).build(), HttpResponse.BodyHandlers.ofString());
    }

    static HttpRequest.Builder request(BankServer bank, String method, String path, String body) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + bank.port() + path))
                .header("Content-Type", "application/json")
                .method(
                        method,
                        body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    }

    /** The database's clock, which the bank's is. */
    static Instant now() throws Exception {
        try (Connection c = TestDatabase.get().connect();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT clock_timestamp()")) {
            rs.next();
            return rs.getObject(1, OffsetDateTime.class).toInstant();
        }
    }

    /** Waits (up to 30 s, polling the database's clock) until it is later than {@code t}. */
    static void awaitPast(Instant t) throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (!now().isAfter(t)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the database's clock did not pass " + t + " within 30 s");
            }
            Thread.sleep(5);
        }
    }
}
