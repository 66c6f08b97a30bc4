package io.github.idemtx.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bench's reduced smoke mode against the test database: every strategy runs briefly at two
 * thread counts, the growth phase loads a small claim table and purges beside {@code claim}, the
 * profile runs, and the outputs are written. It checks that the harness works, never how fast
 * anything was.
 */
@DatabaseTest
class BenchSmokeTest {

    private static final int ACCOUNTS = 50;

    @Test
    void runsEveryStrategyAndWritesTheTableJsonCsvAndChart(@TempDir Path out) throws Exception {
        TestDatabase db = TestDatabase.get();
        String schema = db.schema();
        Options options = Options.parse(new String[] {
            "--schema",
            schema,
            "--keep-schema",
            "--quiet",
            "--threads",
            "1,3",
            "--rounds",
            "1",
            "--ops",
            "24",
            "--warmup-ops",
            "3",
            "--table-rows",
            "2000",
            "--growth-threads",
            "2",
            "--growth-rounds",
            "1",
            "--purge-limit",
            "100",
            "--accounts",
            String.valueOf(ACCOUNTS),
            "--profile-ops",
            "8",
            "--strategies",
            String.join(",", Options.ALL_STRATEGIES) + ",remote-bare,remote-floor,remote-effect",
            "--retry-shares",
            "0,30",
            "--retry-share-threads",
            "2",
            "--out",
            out.toString()
        });
        List<String> printed = new ArrayList<>();

        Bench.Result result = Bench.run(options, database(db), printed::add);

        Report report = result.report();
        assertThat(result.clean()).as("no errors and no unexpected outcomes").isTrue();
        for (String strategy : Options.ALL_STRATEGIES) {
            for (int threads : List.of(1, 3)) {
                Report.Group g = report.group(Report.MAIN, strategy, threads);
                assertThat(g).as(strategy + " x" + threads).isNotNull();
                assertThat(g.totalCalls())
                        .as(strategy + " x" + threads + " calls")
                        .isGreaterThan(0);
                assertThat(g.errors()).isZero();
                assertThat(g.kind(Strategy.Kind.OTHER)).isZero();
                assertThat(g.ops()).isPositive();
                assertThat(report.ratioToBare(g)).isNotNull();
            }
        }
        // the burst: every call of a wave is accounted for, and one call per wave executes
        Report.Group burst = report.group(Report.MAIN, Strategies.BURST, 3);
        assertThat(burst.kind(Strategy.Kind.EXECUTED)).isPositive();
        assertThat(burst.kind(Strategy.Kind.EXECUTED)
                        + burst.kind(Strategy.Kind.WAITED)
                        + burst.kind(Strategy.Kind.REPLAYED)
                        + burst.kind(Strategy.Kind.IN_PROGRESS))
                .isEqualTo(burst.totalCalls());
        assertThat(burst.kind(Strategy.Kind.EXECUTED) * 3).isEqualTo(burst.totalCalls()); // waves are measured whole
        // replays replayed; bare, claim, floor and three-tx executed
        assertThat(report.group(Report.MAIN, Strategies.REPLAY, 1).kind(Strategy.Kind.REPLAYED))
                .isEqualTo(report.group(Report.MAIN, Strategies.REPLAY, 1).totalCalls());
        // each floor sends what its definition says: the work-first floor the bare transfer's 4 round
        // trips, the claim-first floor one more (its claim INSERT rides with BEGIN, its UPDATE with
        // COMMIT), as the default claim does (a short segment's count is blurred at its edges)
        assertThat(report.group(Report.MAIN, Strategies.FLOOR, 1).roundTrips())
                .isCloseTo(4.0, org.assertj.core.api.Assertions.within(0.4));
        assertThat(report.group(Report.MAIN, Strategies.FLOOR_CLAIM_FIRST, 1).roundTrips())
                .isCloseTo(5.0, org.assertj.core.api.Assertions.within(0.4));
        assertThat(report.group(Report.MAIN, Strategies.CLAIM, 1).roundTrips())
                .isCloseTo(5.0, org.assertj.core.api.Assertions.within(0.4));
        assertThat(report.group(Report.MAIN, Strategies.CLAIM_WORK_FIRST, 1).roundTrips())
                .isCloseTo(4.0, org.assertj.core.api.Assertions.within(0.4));
        assertThat(report.goals()).anyMatch(g -> g.name().equals("claim/floor-claim-first at 1 client"));
        assertThat(report.goals()).anyMatch(g -> g.name().equals("claim-adaptive/floor at 3 clients"));
        // the growth phase: empty and preloaded, with the purge beside claim
        assertThat(report.growthTargets()).containsExactly(0L, 2000L);
        assertThat(report.ratio(Report.GROWTH + ":2000", Strategies.CLAIM_PURGE, Strategies.BARE, 2))
                .isNotNull();
        assertThat(report.ratio(Report.GROWTH + ":0", Strategies.CLAIM, Strategies.BARE, 2))
                .isNotNull();
        assertThat(report.goals()).hasSizeGreaterThanOrEqualTo(5);
        // the retry-share phase: each step ran the three modes on the same traffic, and retries replayed
        assertThat(report.retryShares()).containsExactly(0, 30);
        long replayed = 0;
        for (int step = 0; step < 2; step++) {
            assertThat(report.mixedOverBestFixed(step, 2)).hasSize(1);
            for (String mixed : Options.MIXED_STRATEGIES) {
                Report.Group g = report.group(Report.RETRY_SHARE + ":" + step, mixed, 2);
                assertThat(g.errors()).as(mixed).isZero();
                assertThat(g.kind(Strategy.Kind.OTHER)).as(mixed).isZero();
                replayed += g.kind(Strategy.Kind.REPLAYED);
            }
        }
        assertThat(replayed).isPositive();
        assertThat(report.goals()).anyMatch(g -> g.name().startsWith("mixed/best-fixed at 30%"));
        assertThat(report.goals()).anyMatch(g -> g.name().startsWith("remote-effect/remote-floor at 1 client"));
        assertThat(printed).anyMatch(s -> s.contains("Retry share"));

        // the outputs
        assertThat(printed).anyMatch(s -> s.contains("Main comparison") && s.contains("x bare") && s.contains("Goals"));
        Path json = out.resolve("results.json");
        Path csv = out.resolve("results.csv");
        Path svg = out.resolve("throughput.svg");
        assertThat(Files.readString(json))
                .contains("\"summary\"", "\"goals\"", "\"segments\"", "\"profile\"", "\"ratio_to_bare\"");
        List<String> lines = Files.readAllLines(csv);
        assertThat(lines.get(0)).startsWith("phase,table_rows_target,strategy,threads");
        assertThat(lines).hasSize(1 + report.groups().size());
        assertThat(Files.readString(svg))
                .startsWith("<svg")
                .contains("claim", "three-tx", "duplicate-burst")
                .endsWith("</svg>\n");
        assertThat(out.resolve("growth.svg")).exists();
        assertThat(Files.readString(out.resolve("retry-share.svg")))
                .startsWith("<svg")
                .contains("retries", "CLAIM_FIRST");
        assertThat((List<?>) report.toMap().get("profile"))
                .hasSize(options.strategies().size() + 1);

        // the harness left a consistent ledger and counted the claim table right
        try (Connection c = db.connect();
                Statement s = c.createStatement()) {
            assertThat(single(s, "SELECT sum(balance) FROM " + schema + ".account", BigDecimal.class))
                    .isEqualByComparingTo(Ledger.INITIAL_BALANCE.multiply(BigDecimal.valueOf(ACCOUNTS)));
            assertThat(single(s, "SELECT count(*) FROM " + schema + ".idempotency_claim WHERE state <> 1", Long.class))
                    .isZero();
        }
    }

    @Test
    void rejectsUnknownFlagsAndStrategies() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Options.parse(new String[] {"--nope", "1"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("nope");
        org.assertj.core.api.Assertions.assertThatThrownBy(
                        () -> Options.parse(new String[] {"--strategies", "bare,fast"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fast");
        assertThat(Options.parse(new String[] {"--duration", "1.5s", "--table-rows", "1_000_000"})
                        .duration()
                        .toMillis())
                .isEqualTo(1500);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Options.parse(new String[] {"--rounds", "ten"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--rounds must be a whole number, was 'ten'");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Options.parse(new String[] {"--threads", "1,x"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--threads must be a whole number, was 'x'");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Options.parse(new String[] {"--table-rows", "1M"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--table-rows")
                .hasMessageContaining("1M");
        org.assertj.core.api.Assertions.assertThatThrownBy(
                        () -> Options.parse(new String[] {"--pool-size", "9999999999"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--pool-size is out of range");
    }

    private static <T> T single(Statement s, String sql, Class<T> type) throws SQLException {
        try (ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getObject(1, type);
        }
    }

    private static Bench.Database database(TestDatabase db) {
        return new Bench.Database() {
            @Override
            public HikariDataSource pool(String name, int size, String initSql) {
                return db.newPool(size, config -> Bench.configure(config, name, size, initSql));
            }

            @Override
            public Connection connect() throws SQLException {
                return db.connect();
            }
        };
    }
}
