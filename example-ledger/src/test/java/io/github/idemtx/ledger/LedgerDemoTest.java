package io.github.idemtx.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.db.testing.TestDatabase;
import org.junit.jupiter.api.Test;

class LedgerDemoTest {

    @Test
    void theWalkThroughPassesEveryCheckItMakes() throws Exception {
        TestDatabase db = TestDatabase.get();
        String schema = db.schema() + "_ledger";
        try (HikariDataSource pool = db.newPool(40)) {
            assertThat(LedgerDemo.run(pool, schema)).as("failed checks").isZero();
        } finally {
            db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }
}
