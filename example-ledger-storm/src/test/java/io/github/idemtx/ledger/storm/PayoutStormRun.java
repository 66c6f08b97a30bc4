package io.github.idemtx.ledger.storm;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.db.testing.TestDatabase;
import java.util.ArrayList;
import java.util.List;

/**
 * A payout storm's short form as the tests run it: on the test database, in schemas of its own
 * (the ledger's, and the bank's beside it), its report printed and every invariant asserted.
 */
final class PayoutStormRun {

    private PayoutStormRun() {}

    /** Runs {@code storm --payouts} with {@code flags} in schema suffix {@code suffix}; every invariant holds. */
    static PayoutStorm.Report run(String suffix, String... flags) throws Exception {
        TestDatabase db = TestDatabase.get();
        List<String> args = new ArrayList<>(List.of("--payouts"));
        args.addAll(List.of(flags));
        args.add("--schema=" + schema(suffix));
        args.add("--db-url=" + db.serverUrl());
        args.add("--db-user=" + (db.user() == null ? "postgres" : db.user()));
        if (db.password() != null) {
            args.add("--db-password=" + db.password());
        }
        PayoutStorm.Report report = PayoutStorm.run(PayoutStorm.parse(args.toArray(String[]::new)), System.out);
        System.out.print(report.render());
        assertThat(report.invariants())
                .isNotEmpty()
                .allSatisfy((name, holds) -> assertThat(holds).as(name).isTrue());
        return report;
    }

    /** Drops the storm's schemas. */
    static void drop(String suffix) {
        TestDatabase db = TestDatabase.get();
        db.execute("DROP SCHEMA IF EXISTS " + schema(suffix) + " CASCADE");
        db.execute("DROP SCHEMA IF EXISTS " + schema(suffix) + "_bank CASCADE");
    }

    private static String schema(String suffix) {
        return TestDatabase.get().schema() + "_" + suffix;
    }
}
