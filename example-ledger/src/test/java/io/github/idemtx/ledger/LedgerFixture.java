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
}
