package io.github.idemtx.ledger;

import io.github.idemtx.db.testing.TestDatabase;
import java.util.ArrayList;
import java.util.List;

/** Arguments that point a ledger at the test database, in a schema of its own. */
final class LedgerFixture {

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
        args.addAll(List.of(more));
        return args.toArray(String[]::new);
    }

    static void dropSchema(String schemaSuffix) {
        TestDatabase db = TestDatabase.get();
        db.execute("DROP SCHEMA IF EXISTS " + db.schema() + "_" + schemaSuffix + " CASCADE");
    }
}
