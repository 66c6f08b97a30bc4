package io.github.idemtx.ledger;

import io.github.idemtx.db.testing.TestDatabase;
import java.util.ArrayList;
import java.util.List;

/**
 * Arguments that point a ledger at the test database, in a schema of its own, with a pool of
 * {@value #POOL_SIZE} unless {@code more} gives {@code --pool-size}: the module's tests run in two
 * JVMs at once, each with ledgers and banks of its own, on a server whose connections other programs
 * share.
 */
final class LedgerFixture {

    static final int POOL_SIZE = 8;

    private LedgerFixture() {}

    static String[] args(String schemaSuffix, String... more) {
        TestDatabase db = TestDatabase.get();
        List<String> args = new ArrayList<>();
        args.add("--db-url=" + db.url());
        if (db.user() != null) {
            args.add("--db-user=" + db.user());
        }
        if (db.password() != null) {
            args.add("--db-password=" + db.password());
        }
        args.add("--schema=" + db.schema() + "_" + schemaSuffix);
        if (java.util.Arrays.stream(more).noneMatch(a -> a.startsWith("--pool-size="))) {
            args.add("--pool-size=" + POOL_SIZE);
        }
        args.addAll(List.of(more));
        return args.toArray(String[]::new);
    }

    static void dropSchema(String schemaSuffix) {
        TestDatabase db = TestDatabase.get();
        db.execute("DROP SCHEMA IF EXISTS " + db.schema() + "_" + schemaSuffix + " CASCADE");
    }

    /**
     * A request to the ledger on {@code port} as the tenant of {@code token}: JSON, with the
     * idempotency key when one is given, GET when there is no body.
     */
    static LedgerHttpTest.Reply call(int port, String token, String method, String path, String key, String body)
            throws Exception {
        java.net.http.HttpRequest.Builder b = java.net.http.HttpRequest.newBuilder(
                        java.net.URI.create("http://127.0.0.1:" + port + path))
                .header("Authorization", "Bearer " + token)
                .header("Content-Type", "application/json");
        b = body == null ? b.GET() : b.method(method, java.net.http.HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        java.net.http.HttpResponse<String> r = HTTP.send(b.build(), java.net.http.HttpResponse.BodyHandlers.ofString());
        return new LedgerHttpTest.Reply(r.statusCode(), r);
    }

    private static final java.net.http.HttpClient HTTP = java.net.http.HttpClient.newHttpClient();
}
