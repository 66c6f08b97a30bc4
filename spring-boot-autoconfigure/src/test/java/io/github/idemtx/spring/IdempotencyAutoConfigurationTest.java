package io.github.idemtx.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.spring.autoconfigure.IdempotencyAutoConfiguration;
import io.github.idemtx.spring.autoconfigure.IdempotencyPurge;
import io.github.idemtx.spring.autoconfigure.IdempotencySchemaMigration;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.jooq.DSLContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jooq.autoconfigure.JooqAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@DatabaseTest
class IdempotencyAutoConfigurationTest {

    private static final TestDatabase DB = TestDatabase.get();

    /** A context over a schema of its own, with Spring Boot's DataSource, transaction manager, jOOQ and Flyway. */
    private static ApplicationContextRunner runner(String schema) {
        List<String> properties = new ArrayList<>(List.of(
                "spring.datasource.url=" + DB.serverUrl() + (DB.serverUrl().contains("?") ? "&" : "?")
                        + "currentSchema=" + schema,
                "spring.datasource.username=" + (DB.user() == null ? "" : DB.user()),
                "spring.datasource.password=" + (DB.password() == null ? "" : DB.password()),
                "spring.flyway.schemas=" + schema,
                "spring.flyway.locations=classpath:sample/migration",
                "spring.jooq.sql-dialect=POSTGRES",
                "idemtx.schema=" + schema));
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        DataSourceAutoConfiguration.class,
                        DataSourceTransactionManagerAutoConfiguration.class,
                        JooqAutoConfiguration.class,
                        FlywayAutoConfiguration.class,
                        IdempotencyAutoConfiguration.class))
                .withPropertyValues(properties.toArray(String[]::new));
    }

    private static String freshSchema() {
        return "idemtx_boot_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    @Test
    void defaultsGiveTheLibrarysPolicyAMigratedTableBesideTheApplicationsFlywayAndNoPurge() {
        String schema = freshSchema();
        runner(schema).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(IdempotencyPolicy.class).toString())
                    .isEqualTo(IdempotencyPolicy.defaults().toString());
            assertThat(context).hasSingleBean(IdempotentTransactions.class).doesNotHaveBean(IdempotencyPurge.class);
            assertThat(context.getBean(IdempotencySchemaMigration.class).applied())
                    .isPositive();
            DSLContext dsl = context.getBean(DSLContext.class);
            // both histories, both sets of tables: the application's Flyway ran first on an empty schema
            assertThat(dsl.fetchValue(
                            "select count(*) from information_schema.tables where table_schema = ? and table_name in"
                                    + " ('flyway_schema_history', 'idempotency_schema_history', 'payment', 'idempotency_claim')",
                            schema))
                    .isEqualTo(4L);
            IdempotentTransactions transactions = context.getBean(IdempotentTransactions.class);
            assertThat(transactions
                            .strings()
                            .run(Scope.of("s"), IdempotencyKey.of("k"), Fingerprint.sha256("f"), tx -> "ok"))
                    .isInstanceOf(io.github.idemtx.core.Outcome.Executed.class);
        });
        // a second start finds both up to date
        runner(schema).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(IdempotencySchemaMigration.class).applied())
                    .isZero();
        });
    }

    @Test
    void thePolicyComesFromTheProperties() {
        runner(freshSchema())
                .withPropertyValues(
                        "idemtx.ttl=2h",
                        "idemtx.duplicate-wait=750ms",
                        "idemtx.retry-after=3s",
                        "idemtx.max-attempts=3",
                        "idemtx.initial-backoff=10ms",
                        "idemtx.max-backoff=80ms",
                        "idemtx.max-result-bytes=4096")
                .run(context -> {
                    IdempotencyPolicy policy = context.getBean(IdempotencyPolicy.class);
                    assertThat(policy.ttl()).isEqualTo(Duration.ofHours(2));
                    assertThat(policy.duplicateWait()).isEqualTo(Duration.ofMillis(750));
                    assertThat(policy.retryAfter()).isEqualTo(Duration.ofSeconds(3));
                    assertThat(policy.maxAttempts()).isEqualTo(3);
                    assertThat(policy.initialBackoff()).isEqualTo(Duration.ofMillis(10));
                    assertThat(policy.maxBackoff()).isEqualTo(Duration.ofMillis(80));
                    assertThat(policy.maxResultBytes()).isEqualTo(4096);
                    assertThat(context.getBean(IdempotentTransactions.class).policy())
                            .isSameAs(policy);
                });
    }

    @Test
    void theClaimModeComesFromTheProperty() {
        // unset: claim first, the library's default
        runner(freshSchema())
                .run(context -> assertThat(context.getBean(IdempotentTransactions.class)
                                .strings()
                                .claimMode())
                        .isEqualTo(io.github.idemtx.jooq.ClaimMode.CLAIM_FIRST));
        runner(freshSchema())
                .withPropertyValues("idemtx.claim-mode=work-first")
                .run(context -> assertThat(context.getBean(IdempotentTransactions.class)
                                .strings()
                                .claimMode())
                        .isEqualTo(io.github.idemtx.jooq.ClaimMode.WORK_FIRST));
        // the README's spelling (the enum's constant) binds as well as Boot's relaxed lower-case one
        runner(freshSchema())
                .withPropertyValues("idemtx.claim-mode=WORK_FIRST")
                .run(context -> assertThat(context.getBean(IdempotentTransactions.class)
                                .strings()
                                .claimMode())
                        .isEqualTo(io.github.idemtx.jooq.ClaimMode.WORK_FIRST));
        runner(freshSchema())
                .withPropertyValues("idemtx.claim-mode=sometimes")
                .run(context -> assertThat(context.getStartupFailure()).hasStackTraceContaining("idemtx.claim-mode"));
    }

    @Test
    @ExtendWith(OutputCaptureExtension.class)
    void theDeprecatedReadFirstIsClaimFirstWithAWarning(CapturedOutput output) {
        runner(freshSchema())
                .withPropertyValues("idemtx.claim-mode=READ_FIRST")
                .run(context -> assertThat(context.getBean(IdempotentTransactions.class)
                                .strings()
                                .claimMode())
                        .isEqualTo(io.github.idemtx.jooq.ClaimMode.CLAIM_FIRST));
        assertThat(output.getAll()).contains("idemtx.claim-mode=READ_FIRST is deprecated");
    }

    @Test
    @ExtendWith(OutputCaptureExtension.class)
    void oneInfoLineAtStartSaysWhatWasConfigured(CapturedOutput output) {
        String schema = freshSchema();
        runner(schema)
                .withPropertyValues("idemtx.claim-mode=work-first", "idemtx.ttl=2h", "idemtx.duplicate-wait=3s")
                .run(context -> assertThat(context).hasNotFailed());
        List<String> lines = output.getAll()
                .lines()
                .filter(l -> l.contains("INFO") && l.contains("idemtx: "))
                .toList();
        assertThat(lines).hasSize(1);
        assertThat(lines.get(0))
                .contains("claim mode WORK_FIRST")
                .contains("ttl PT2H")
                .contains("duplicate wait PT3S")
                .contains("schema " + schema + " (migrated at start-up)")
                .contains("Spring transaction detector active")
                .contains("metrics off");
        runner(freshSchema())
                .withBean(
                        io.micrometer.core.instrument.MeterRegistry.class,
                        io.micrometer.core.instrument.simple.SimpleMeterRegistry::new)
                .run(context -> assertThat(context).hasNotFailed());
        assertThat(output.getAll()).contains("claim mode CLAIM_FIRST, ").contains("metrics on");
    }

    @Test
    void anOutOfRangePropertyStopsTheStartWithItsName() {
        runner(freshSchema())
                .withPropertyValues("idemtx.max-attempts=0")
                .run(context ->
                        assertThat(context).hasFailed().getFailure().rootCause().hasMessageContaining("maxAttempts"));
        runner(freshSchema())
                .withPropertyValues("idemtx.max-attempts=0")
                .run(context -> assertThat(context.getStartupFailure()).hasStackTraceContaining("idemtx.max-attempts"));
        runner(freshSchema())
                .withPropertyValues("idemtx.schema=no-such;schema")
                .run(context -> assertThat(context.getStartupFailure()).hasStackTraceContaining("idemtx.schema"));
        runner(freshSchema())
                .withPropertyValues("idemtx.purge.enabled=true", "idemtx.purge.limit=0")
                .run(context -> assertThat(context.getStartupFailure()).hasStackTraceContaining("idemtx.purge.limit"));
    }

    @Test
    void theMigrationCanBeSwitchedOff() {
        String schema = freshSchema();
        runner(schema).withPropertyValues("idemtx.migration.enabled=false").run(context -> {
            assertThat(context).hasNotFailed().doesNotHaveBean(IdempotencySchemaMigration.class);
            assertThat(context.getBean(DSLContext.class)
                            .fetchValue(
                                    "select count(*) from information_schema.tables"
                                            + " where table_schema = ? and table_name = 'idempotency_claim'",
                                    schema))
                    .isEqualTo(0L);
        });
    }

    @Test
    void theScheduledPurgeDeletesExpiredClaims() {
        String schema = freshSchema();
        runner(schema)
                .withPropertyValues("idemtx.purge.enabled=true", "idemtx.purge.interval=1h", "idemtx.purge.limit=2")
                .run(context -> {
                    IdempotentTransactions transactions = context.getBean(IdempotentTransactions.class);
                    for (int i = 0; i < 5; i++) {
                        transactions
                                .strings()
                                .run(Scope.of("s"), IdempotencyKey.of("k" + i), Fingerprint.sha256("f"), tx -> "ok");
                    }
                    DSLContext dsl = context.getBean(DSLContext.class);
                    dsl.execute("update " + schema + ".idempotency_claim set expires_at = now() - interval '1 minute'"
                            + " where idem_key in ('k0', 'k1', 'k2')");
                    IdempotencyPurge purge = context.getBean(IdempotencyPurge.class);
                    assertThat(purge.isRunning()).isTrue();
                    assertThat(purge.purgeNow())
                            .as("three expired, in rounds of two")
                            .isEqualTo(3);
                    assertThat(dsl.fetchValue("select count(*) from " + schema + ".idempotency_claim"))
                            .isEqualTo(2L);
                });
    }

    @Test
    void theApplicationsOwnBeansWin() {
        IdempotencyPolicy mine = IdempotencyPolicy.builder().maxAttempts(2).build();
        runner(freshSchema())
                .withUserConfiguration(OwnPolicy.class)
                .run(context -> assertThat(
                                context.getBean(IdempotencyPolicy.class).maxAttempts())
                        .isEqualTo(mine.maxAttempts()));
    }

    @Test
    void withoutADslContextNothingIsConfigured() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(IdempotencyAutoConfiguration.class))
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(IdempotentTransactions.class));
    }

    @Test
    void everyPropertyHasMetadataForIdes() throws Exception {
        String metadata;
        try (var in = getClass().getClassLoader().getResourceAsStream("META-INF/spring-configuration-metadata.json")) {
            assertThat(in)
                    .as("generated by spring-boot-configuration-processor")
                    .isNotNull();
            metadata = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        }
        for (String property : List.of(
                "idemtx.schema",
                "idemtx.ttl",
                "idemtx.duplicate-wait",
                "idemtx.retry-after",
                "idemtx.max-attempts",
                "idemtx.initial-backoff",
                "idemtx.max-backoff",
                "idemtx.max-result-bytes",
                "idemtx.migration.enabled",
                "idemtx.purge.enabled",
                "idemtx.purge.interval",
                "idemtx.purge.limit",
                "idemtx.web.max-body-bytes",
                "idemtx.web.scope.jwt-claim",
                "idemtx.recovery.enabled",
                "idemtx.recovery.interval",
                "idemtx.recovery.batch",
                "idemtx.recovery.workers",
                "idemtx.recovery.shutdown-timeout",
                "idemtx.health.max-needing-reconciliation",
                "idemtx.health.max-in-flight-age",
                "idemtx.health.exceeded-status",
                "management.health.idempotency.enabled",
                "management.endpoint.idempotency.access")) {
            assertThat(metadata).contains("\"name\": \"" + property + "\"");
        }
        // the recovery's properties carry a description and their default for the IDE
        tools.jackson.databind.JsonNode properties = tools.jackson.databind.json.JsonMapper.builder()
                .build()
                .readTree(metadata)
                .get("properties");
        java.util.Map<String, String> defaults = java.util.Map.of(
                "idemtx.recovery.enabled", "true",
                "idemtx.recovery.interval", "10s",
                "idemtx.recovery.batch", "100",
                "idemtx.recovery.workers", "2",
                "idemtx.recovery.shutdown-timeout", "30s",
                "idemtx.health.max-needing-reconciliation", "0",
                "idemtx.health.max-in-flight-age", "15m",
                "idemtx.health.exceeded-status", "WARNING");
        for (tools.jackson.databind.JsonNode p : properties) {
            String name = p.get("name").asString();
            if (defaults.containsKey(name)) {
                assertThat(p.path("description").asString()).as(name).isNotBlank();
                assertThat(p.path("defaultValue").asString()).as(name).isEqualTo(defaults.get(name));
            }
            if (name.equals("idemtx.web.scope.jwt-claim")) {
                // unset by default: the scope is the principal's name
                assertThat(p.path("description").asString()).as(name).contains("JWT claim");
                assertThat(p.has("defaultValue")).as(name).isFalse();
            }
        }
        // the claim mode's default and values are spelt as the README and the enum spell them
        assertThat(metadata)
                .contains("\"defaultValue\": \"CLAIM_FIRST\"")
                .doesNotContain("read-first")
                .contains("\"value\": \"ADAPTIVE\"", "\"value\": \"CLAIM_FIRST\"", "\"value\": \"WORK_FIRST\"");
    }

    @Test
    void withAMeterRegistryEveryInstanceReportsToIt() {
        runner(freshSchema())
                .withBean(
                        io.micrometer.core.instrument.MeterRegistry.class,
                        io.micrometer.core.instrument.simple.SimpleMeterRegistry::new)
                .run(context -> {
                    IdempotentTransactions transactions = context.getBean(IdempotentTransactions.class);
                    transactions
                            .strings()
                            .run(Scope.of("s"), IdempotencyKey.of("metered"), Fingerprint.sha256("f"), tx -> "ok");
                    io.micrometer.core.instrument.MeterRegistry meters =
                            context.getBean(io.micrometer.core.instrument.MeterRegistry.class);
                    assertThat(meters.get("idemtx.call")
                                    .tag("outcome", "executed")
                                    .timer()
                                    .count())
                            .isEqualTo(1);
                });
        runner(freshSchema())
                .withPropertyValues("idemtx.metrics.enabled=false")
                .withBean(
                        io.micrometer.core.instrument.MeterRegistry.class,
                        io.micrometer.core.instrument.simple.SimpleMeterRegistry::new)
                .run(context -> {
                    context.getBean(IdempotentTransactions.class)
                            .strings()
                            .run(Scope.of("s"), IdempotencyKey.of("unmetered"), Fingerprint.sha256("f"), tx -> "ok");
                    assertThat(context.getBean(io.micrometer.core.instrument.MeterRegistry.class)
                                    .find("idemtx.call")
                                    .timer())
                            .isNull();
                });
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnPolicy {
        @Bean
        IdempotencyPolicy idempotencyPolicy() {
            return IdempotencyPolicy.builder().maxAttempts(2).build();
        }
    }
}
