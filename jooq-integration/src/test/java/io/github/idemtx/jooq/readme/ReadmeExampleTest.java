package io.github.idemtx.jooq.readme;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.core.UnsupportedDatabaseException;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.readme.TransferService.Transfer;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The README's service-layer example is {@link TransferService}, compiled and run here, and shown in
 * README.md verbatim: a change to either that the other does not follow fails this test.
 */
@DatabaseTest
class ReadmeExampleTest {

    /** The marker comments in README.md around the example's code block. */
    static final String START = "<!-- TransferService.java: start -->";

    static final String END = "<!-- TransferService.java: end -->";
    static final String SOURCE = "jooq-integration/src/test/java/io/github/idemtx/jooq/readme/TransferService.java";

    private static final TestDatabase DATABASE = TestDatabase.get();
    private static HikariDataSource pool;
    private static TransferService service;

    private final String tenant = "tenant-" + UUID.randomUUID();
    private final String from = "account-" + UUID.randomUUID();

    @BeforeAll
    static void start() {
        // migrations straight to the server (docs/poolers.md): when these tests run through PgBouncer,
        // Flyway's session-level search path must not stay behind on a shared server connection.
        // Two connections: Flyway holds one for its lock while it migrates on the other.
        try (HikariDataSource direct = DATABASE.newServerPool(2)) {
            TransferService.migrate(direct, DATABASE.schema());
        }
        pool = DATABASE.newPool(4);
        service = new TransferService(pool, DATABASE.schema());
    }

    @AfterAll
    static void stop() {
        if (pool != null) {
            pool.close();
        }
    }

    @Test
    void migratesAndRunsOnAPoolWithAutoCommitOff() {
        String schema =
                "idemtx_readme_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
        com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
        config.setJdbcUrl(DATABASE.serverUrl()); // straight to the server: Flyway's session settings stay off PgBouncer
        config.setUsername(DATABASE.user());
        config.setPassword(DATABASE.password());
        config.setAutoCommit(false);
        config.setMaximumPoolSize(2);
        try (HikariDataSource offPool = new HikariDataSource(config)) {
            TransferService.migrate(offPool, schema);
            TransferService off = new TransferService(offPool, schema);
            Outcome<Transfer> first =
                    off.transfer("tenant-off", UUID.randomUUID().toString(), "a", "b", new BigDecimal("1.00"));
            assertThat(first).isInstanceOf(Outcome.Executed.class);
        } finally {
            DATABASE.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    @Test
    void executesOnceThenReplaysThenRefusesTheKeyForAnotherRequest() throws SQLException {
        String key = UUID.randomUUID().toString();

        Outcome<Transfer> first = service.transfer(tenant, key, from, "bob", new BigDecimal("10.00"));
        Outcome<Transfer> retry = service.transfer(tenant, key, from, "bob", new BigDecimal("10.00"));
        Outcome<Transfer> reused = service.transfer(tenant, key, from, "bob", new BigDecimal("99.00"));

        assertThat(first).isInstanceOf(Outcome.Executed.class);
        Transfer transfer = first instanceof Outcome.Executed<Transfer> e ? e.value() : null;
        assertThat(transfer.amount()).isEqualByComparingTo("10.00");
        assertThat(retry)
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class, r -> assertThat(r.value()).isEqualTo(transfer));
        assertThat(reused).isInstanceOf(Outcome.FingerprintMismatch.class);
        assertThat(transfersFrom(from)).as("the transfer took effect once").isEqualTo(1);

        assertThat(TransferService.respond(first)).isEqualTo("201 transfer " + transfer.id());
        assertThat(TransferService.respond(retry))
                .isEqualTo("201 transfer " + transfer.id() + " (Idempotent-Replayed: true)");
        assertThat(TransferService.respond(reused)).isEqualTo("422 key reused with another request");
    }

    @Test
    void recordsTheRejectionAndReplaysIt() throws SQLException {
        String key = UUID.randomUUID().toString();

        Outcome<Transfer> first = service.transfer(tenant, key, from, from, new BigDecimal("5.00"));
        Outcome<Transfer> retry = service.transfer(tenant, key, from, from, new BigDecimal("5.00"));

        assertThat(first)
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class, r -> assertThat(r.replayed()).isFalse());
        assertThat(retry)
                .isInstanceOfSatisfying(
                        Outcome.Rejected.class, r -> assertThat(r.replayed()).isTrue());
        assertThat(TransferService.respond(retry)).isEqualTo("422 same_account: from and to must differ");
        assertThat(transfersFrom(from)).isZero();
    }

    @Test
    void withoutTheSchemaOnTheBuilderACallFailsNamingTheFix() throws SQLException {
        assumeTrue(!claimTableInPublic(), "this database has a claim table in public, so the call would use it");
        IdempotentTransaction<Transfer> inPublic = IdempotentTransaction.builder(
                        DSL.using(pool, SQLDialect.POSTGRES), ResultCodec.json(Transfer.class))
                .build();

        assertThatThrownBy(() -> inPublic.run(
                        Scope.of(tenant),
                        IdempotencyKey.random(),
                        Fingerprint.sha256("x"),
                        tx -> new Transfer(0, from, "bob", BigDecimal.ONE)))
                .isInstanceOfSatisfying(
                        UnsupportedDatabaseException.class,
                        e -> assertThat(e.problem()).isEqualTo(UnsupportedDatabaseException.Problem.NOT_MIGRATED))
                .hasMessageContaining("public.idempotency_claim")
                .hasMessageContaining("IdempotencySchema.migrate(dataSource, \"public\")");
    }

    @Test
    void readmeShowsTheExampleVerbatim() throws IOException {
        Path root = repositoryRoot();
        String readme = normalized(Files.readString(root.resolve("README.md")));
        String source = normalized(Files.readString(root.resolve(SOURCE)));

        int start = readme.indexOf(START);
        int end = readme.indexOf(END);
        assertThat(start).as("README.md has the marker %s", START).isNotNegative();
        assertThat(end)
                .as("README.md has the marker %s after the start marker", END)
                .isGreaterThan(start);
        String shown = readme.substring(start + START.length(), end);

        assertThat(shown)
                .as(
                        "README.md shows %s verbatim, as one java code block between the markers: copy the file's"
                                + " text there after changing it",
                        SOURCE)
                .isEqualTo("\n```java\n" + source + "```\n");
    }

    private static int transfersFrom(String account) throws SQLException {
        try (Connection c = DATABASE.connect();
                PreparedStatement s = c.prepareStatement(
                        "SELECT count(*) FROM " + DATABASE.schema() + ".transfer WHERE from_account = ?")) {
            s.setString(1, account);
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    private static boolean claimTableInPublic() throws SQLException {
        try (Connection c = DATABASE.connect();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT to_regclass('public.idempotency_claim') IS NOT NULL")) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    /** The directory holding README.md and this module ({@link RepositoryRoot}). */
    static Path repositoryRoot() {
        return RepositoryRoot.find();
    }

    private static String normalized(String text) {
        String unix = text.replace("\r\n", "\n");
        return unix.endsWith("\n") ? unix : unix + "\n";
    }
}
