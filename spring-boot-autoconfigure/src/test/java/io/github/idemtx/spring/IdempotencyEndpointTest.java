package io.github.idemtx.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.jooq.ClaimAdmin;
import io.github.idemtx.jooq.EffectRecovery;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.Remote;
import io.github.idemtx.spring.actuate.IdempotencyEndpoint;
import io.github.idemtx.spring.actuate.IdempotencyHealthIndicator;
import io.github.idemtx.spring.autoconfigure.IdempotencyRecovery;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jooq.DSLContext;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The idempotency endpoint and health indicator over HTTP, in a web application with Actuator, an
 * external effect whose lookups never answer (so its unknown outcomes need reconciliation), against
 * PostgreSQL.
 */
@DatabaseTest
class IdempotencyEndpointTest {

    private static final TestDatabase DB = TestDatabase.get();
    private static final JsonMapper JSON = JsonMapper.builder().build();

    record Payout(String account, long amountCents) {}

    record Paid(String reference) {}

    /** A bank whose every call times out and whose lookups never answer. */
    static final class SilentBank implements Remote<Payout, Paid> {
        @Override
        public Reply<Paid> call(Intent<Payout> intent, Instant deadline) {
            throw new IllegalStateException("timed out");
        }

        @Override
        public Lookup<Paid> lookup(Intent<Payout> intent) {
            return Lookup.unknown("the bank does not answer");
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration(
            excludeName = {
                "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration",
                "org.springframework.boot.data.jpa.autoconfigure.DataJpaRepositoriesAutoConfiguration",
                "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration"
            })
    @Import(OperatorsApp.Effects.class)
    static class OperatorsApp {
        static class Effects {
            @Bean
            ExternalEffect<Payout, Paid> payout(ExternalEffects effects) {
                return effects.jsonBuilder("payout", Payout.class, Paid.class, new SilentBank())
                        .lease(Duration.ofSeconds(5)) // the tests end leases by SQL (makeDue), not by waiting
                        .lookupSchedule(List.of()) // the first unanswered lookup hands it to an operator
                        .build();
            }
        }
    }

    /** The application, on a port of its own, over a schema of its own. */
    private static ConfigurableApplicationContext start(String... properties) {
        String schema =
                "idemtx_ops_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        List<String> all = new ArrayList<>(List.of(
                "server.port=0",
                "spring.datasource.url=" + DB.serverUrl() + (DB.serverUrl().contains("?") ? "&" : "?")
                        + "currentSchema=" + schema,
                "spring.datasource.username=" + (DB.user() == null ? "" : DB.user()),
                "spring.datasource.password=" + (DB.password() == null ? "" : DB.password()),
                "spring.jooq.sql-dialect=POSTGRES",
                "idemtx.schema=" + schema,
                "idemtx.recovery.interval=1d",
                "management.endpoint.health.show-details=always"));
        all.addAll(List.of(properties));
        ConfigurableApplicationContext app = new SpringApplicationBuilder(OperatorsApp.class)
                .properties(all.toArray(String[]::new))
                .run();
        // the tests run their own recovery passes: the scheduled one (its first runs at start) stays out
        app.getBean(IdempotencyRecovery.class).stop();
        return app;
    }

    private final HttpClient http = HttpClient.newHttpClient();
    private final Scope scope = Scope.of("tenant-" + UUID.randomUUID());

    private HttpResponse<String> send(ConfigurableApplicationContext app, String method, String path, String body)
            throws Exception {
        String port = app.getEnvironment().getProperty("local.server.port");
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                .header("Content-Type", "application/json")
                .method(
                        method,
                        body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(ConfigurableApplicationContext app, String path) throws Exception {
        return send(app, "GET", path, null);
    }

    private static JsonNode json(HttpResponse<String> response) {
        return JSON.readTree(response.body());
    }

    private String claimPath(String key) {
        return "/actuator/idempotency/" + URLEncoder.encode(scope.value(), StandardCharsets.UTF_8) + "/" + key;
    }

    /** A payout whose outcome stayed unknown through every lookup: it needs reconciliation. */
    private void needingReconciliation(ConfigurableApplicationContext app, String key) {
        @SuppressWarnings("unchecked")
        ExternalEffect<Payout, Paid> payout = app.getBean(ExternalEffect.class);
        assertThat(payout.run(scope, IdempotencyKey.of(key), Fingerprint.sha256(key), new Payout("acc", 500)))
                .isInstanceOf(RemoteOutcome.Unknown.class);
        inFlightDue(app);
        assertThat(payout.recovery().recover(10).count(EffectRecovery.Ending.RECONCILIATION))
                .isEqualTo(1);
    }

    private static void inFlightDue(ConfigurableApplicationContext app) {
        String schema = app.getEnvironment().getProperty("idemtx.schema");
        app.getBean(DSLContext.class)
                .execute("update " + schema + ".idempotency_claim set lease_until = now() - interval '1 minute',"
                        + " next_lookup_at = null where state = 3");
    }

    private void completed(ConfigurableApplicationContext app, String key) {
        app.getBean(IdempotentTransactions.class)
                .strings()
                .run(scope, IdempotencyKey.of(key), Fingerprint.sha256(key), tx -> "done");
    }

    private static String note(String operator, String reason) {
        return "\"operator\": \"" + operator + "\", \"reason\": \"" + reason + "\"";
    }

    @Test
    void notExposedUnlessTheApplicationExposesIt() throws Exception {
        try (ConfigurableApplicationContext app = start()) {
            assertThat(app.getBeansOfType(IdempotencyEndpoint.class)).isEmpty();
            assertThat(app.getBeansOfType(ClaimAdmin.class)).hasSize(1);
            assertThat(get(app, "/actuator/idempotency").statusCode()).isEqualTo(404);
            // the health indicator is there all the same (health is exposed by default)
            assertThat(json(get(app, "/actuator/health")).path("components").has("idempotency"))
                    .isTrue();
        }
    }

    @Test
    void readsShowTheBacklogAPageOfClaimsAndOneClaim() throws Exception {
        try (ConfigurableApplicationContext app = start("management.endpoints.web.exposure.include=idempotency")) {
            needingReconciliation(app, "p1");
            needingReconciliation(app, "p2");
            needingReconciliation(app, "p3");

            JsonNode backlog = json(get(app, "/actuator/idempotency"));
            assertThat(backlog.path("needingReconciliation").asLong()).isEqualTo(3);
            assertThat(backlog.path("inFlight").asLong()).isZero();
            assertThat(backlog.path("effects").get(0).asString()).isEqualTo("payout");

            HttpResponse<String> first = get(app, "/actuator/idempotency/needs_reconciliation?limit=2");
            assertThat(first.statusCode()).isEqualTo(200);
            JsonNode page = json(first);
            assertThat(page.path("claims").size()).isEqualTo(2);
            String next = page.path("next").asString();
            JsonNode rest = json(get(app, "/actuator/idempotency/needs_reconciliation?limit=2&after=" + next));
            assertThat(rest.path("claims").size()).isEqualTo(1);
            assertThat(rest.path("next").isNull()).isTrue();
            List<String> keys = new ArrayList<>();
            page.path("claims").forEach(c -> keys.add(c.path("key").asString()));
            rest.path("claims").forEach(c -> keys.add(c.path("key").asString()));
            assertThat(keys).containsExactlyInAnyOrder("p1", "p2", "p3");

            JsonNode claim = json(get(app, claimPath("p1")));
            assertThat(claim.path("state").asString()).isEqualTo("needs_reconciliation");
            assertThat(claim.path("effect").asString()).isEqualTo("payout");
            assertThat(claim.path("request").path("amountCents").asLong()).isEqualTo(500);
            assertThat(claim.path("downstreamKey").asString()).startsWith("payout:");

            HttpResponse<String> missing = get(app, claimPath("nothing-here"));
            assertThat(missing.statusCode()).isEqualTo(404);
            assertThat(json(missing).path("error").asString()).isEqualTo("not_found");
            HttpResponse<String> badState = get(app, "/actuator/idempotency/completed");
            assertThat(badState.statusCode()).isEqualTo(400);
            assertThat(json(badState).path("message").asString()).contains("completed");
            HttpResponse<String> badCursor = get(app, "/actuator/idempotency/in_flight?after=garbage");
            assertThat(badCursor.statusCode()).isEqualTo(400);
            assertThat(json(badCursor).path("message").asString()).contains("after");
        }
    }

    @Test
    void writesAreRefusedWhileTheEndpointIsReadOnly() throws Exception {
        try (ConfigurableApplicationContext app = start("management.endpoints.web.exposure.include=idempotency")) {
            needingReconciliation(app, "r1");
            completed(app, "done");
            HttpResponse<String> resolve = send(
                    app,
                    "POST",
                    claimPath("r1"),
                    "{\"outcome\": \"applied\", \"answer\": \"{\\\"reference\\\": \\\"x\\\"}\", "
                            + note("alice", "on the statement") + "}");
            assertThat(resolve.statusCode()).as("not mapped while read-only").isBetween(400, 499);
            HttpResponse<String> forget = send(app, "DELETE", claimPath("done") + "?operator=alice&reason=test", null);
            assertThat(forget.statusCode()).as("not mapped while read-only").isBetween(400, 499);
            assertThat(json(get(app, claimPath("r1"))).path("state").asString()).isEqualTo("needs_reconciliation");
            assertThat(json(get(app, claimPath("done"))).path("state").asString())
                    .isEqualTo("completed");
        }
    }

    @Test
    void writesResolveAndForgetWhenAccessIsUnrestrictedAndRefuseWhatTheStateDoesNotAllow() throws Exception {
        try (ConfigurableApplicationContext app = start(
                "management.endpoints.web.exposure.include=idempotency",
                "management.endpoint.idempotency.access=unrestricted")) {
            needingReconciliation(app, "a1");
            needingReconciliation(app, "a2");
            needingReconciliation(app, "as-text");
            completed(app, "done");

            HttpResponse<String> applied = send(
                    app,
                    "POST",
                    claimPath("a1"),
                    "{\"outcome\": \"applied\", \"answer\": \"{\\\"reference\\\": \\\"bank-77\\\"}\", "
                            + note("alice", "on statement 2026-12-02") + "}");
            assertThat(applied.statusCode()).as(applied.body()).isEqualTo(200);
            JsonNode after = json(applied);
            assertThat(after.path("state").asString()).isEqualTo("completed");
            assertThat(after.path("answer").path("reference").asString()).isEqualTo("bank-77");
            assertThat(after.path("history").get(0).path("operator").asString()).isEqualTo("alice");
            assertThat(after.path("history").get(0).path("action").asString()).isEqualTo("resolved_applied");

            // the answer as a JSON object, not its JSON text in a string: Spring Boot reads an endpoint's
            // body as text values and refuses it with a bare 400 before the endpoint runs (spring-boot.md
            // says so); nothing is recorded, and the same answer as text is taken
            HttpResponse<String> asObject = send(
                    app,
                    "POST",
                    claimPath("as-text"),
                    "{\"outcome\": \"applied\", \"answer\": {\"reference\": \"bank-78\"}, "
                            + note("alice", "on statement 2026-12-02") + "}");
            assertThat(asObject.statusCode()).as(asObject.body()).isEqualTo(400);
            HttpResponse<String> asText = send(
                    app,
                    "POST",
                    claimPath("as-text"),
                    "{\"outcome\": \"applied\", \"answer\": \"{\\\"reference\\\": \\\"bank-78\\\"}\", "
                            + note("alice", "on statement 2026-12-02") + "}");
            assertThat(asText.statusCode()).as(asText.body()).isEqualTo(200);
            assertThat(json(asText).path("answer").path("reference").asString()).isEqualTo("bank-78");
            assertThat(json(asText).path("history")).as("resolved once").hasSize(1);

            // resolving it again: the state does not allow it
            HttpResponse<String> again = send(
                    app,
                    "POST",
                    claimPath("a1"),
                    "{\"outcome\": \"refused\", \"code\": \"declined\", \"message\": \"no\", " + note("bob", "x")
                            + "}");
            assertThat(again.statusCode()).isEqualTo(409);
            assertThat(json(again).path("error").asString()).isEqualTo("wrong_state");

            HttpResponse<String> refused = send(
                    app,
                    "POST",
                    claimPath("a2"),
                    "{\"outcome\": \"refused\", \"code\": \"closed-account\", \"message\": \"the account is closed\", "
                            + note("bob", "the bank says so") + "}");
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(200);
            assertThat(json(refused).path("failure").path("code").asString()).isEqualTo("closed-account");

            HttpResponse<String> notFound = send(
                    app,
                    "POST",
                    claimPath("never"),
                    "{\"outcome\": \"applied\", \"answer\": \"{}\", " + note("bob", "x") + "}");
            assertThat(notFound.statusCode()).isEqualTo(404);
            HttpResponse<String> blankOperator =
                    send(app, "POST", claimPath("a2"), "{\"outcome\": \"applied\", " + note(" ", "x") + "}");
            assertThat(blankOperator.statusCode()).isEqualTo(400);
            assertThat(json(blankOperator).path("message").asString()).contains("operator");
            HttpResponse<String> badOutcome =
                    send(app, "POST", claimPath("a2"), "{\"outcome\": \"maybe\", " + note("bob", "x") + "}");
            assertThat(badOutcome.statusCode()).isEqualTo(400);
            assertThat(json(badOutcome).path("message").asString()).contains("outcome");

            HttpResponse<String> forgotten =
                    send(app, "DELETE", claimPath("done") + "?operator=carol&reason=client%20must%20retry", null);
            assertThat(forgotten.statusCode()).as(forgotten.body()).isEqualTo(200);
            assertThat(json(forgotten).path("state").asString()).isEqualTo("completed");
            assertThat(get(app, claimPath("done")).statusCode()).isEqualTo(404);
            HttpResponse<String> forgetAgain =
                    send(app, "DELETE", claimPath("done") + "?operator=carol&reason=again", null);
            assertThat(forgetAgain.statusCode()).isEqualTo(404);

            // a claim of an effect that is not a bean here: its local writes cannot run
            ExternalEffect<Payout, Paid> refund = app.getBean(ExternalEffects.class)
                    .jsonBuilder("refund", Payout.class, Paid.class, new SilentBank())
                    .lookupSchedule(List.of())
                    .build();
            refund.run(scope, IdempotencyKey.of("x1"), Fingerprint.sha256("x1"), new Payout("acc", 5));
            inFlightDue(app);
            assertThat(refund.recovery().recover(10).count(EffectRecovery.Ending.RECONCILIATION))
                    .isEqualTo(1);
            HttpResponse<String> unknownEffect = send(
                    app,
                    "POST",
                    claimPath("x1"),
                    "{\"outcome\": \"applied\", \"answer\": \"{}\", " + note("bob", "x") + "}");
            assertThat(unknownEffect.statusCode()).isEqualTo(422);
            assertThat(json(unknownEffect).path("error").asString()).isEqualTo("unknown_effect");

            // a claim that is not settled cannot be forgotten: that could repeat the payout
            needingReconciliation(app, "a3");
            HttpResponse<String> unsettled = send(app, "DELETE", claimPath("a3") + "?operator=carol&reason=oops", null);
            assertThat(unsettled.statusCode()).isEqualTo(409);
            assertThat(json(unsettled).path("error").asString()).isEqualTo("wrong_state");
        }
    }

    /**
     * What an operator gets wrong is refused naming it, and nothing is written: an applied outcome
     * without its answer (a misspelt field would otherwise record a null result for good), a
     * refusal's code beside an answer, a missing operator or limit that is no number.
     */
    @Test
    void incompleteOrMixedUpWritesAreRefusedNamingWhatIsWrong() throws Exception {
        try (ConfigurableApplicationContext app = start(
                "management.endpoints.web.exposure.include=idempotency",
                "management.endpoint.idempotency.access=unrestricted")) {
            needingReconciliation(app, "m1");
            Map<String, String> wrong = Map.of(
                    "{\"outcome\": \"applied\", \"answr\": \"{}\", " + note("bob", "x") + "}",
                    "needs the answer",
                    "{\"outcome\": \"applied\", \"answer\": \"{}\", \"code\": \"declined\", " + note("bob", "x") + "}",
                    "not a code",
                    "{\"outcome\": \"refused\", \"answer\": \"{}\", \"code\": \"c\", \"message\": \"m\", "
                            + note("bob", "x") + "}",
                    "not an answer",
                    "{\"outcome\": \"refused\", \"code\": \"c\", \"message\": \"m\", \"reason\": \"x\"}",
                    "operator is required",
                    "{\"answer\": \"{}\", " + note("bob", "x") + "}",
                    "outcome is required");
            for (Map.Entry<String, String> body : wrong.entrySet()) {
                HttpResponse<String> r = send(app, "POST", claimPath("m1"), body.getKey());
                assertThat(r.statusCode()).as(body.getKey()).isEqualTo(400);
                assertThat(json(r).path("error").asString()).isEqualTo("bad_input");
                assertThat(json(r).path("message").asString()).as(body.getKey()).contains(body.getValue());
            }
            HttpResponse<String> limit = get(app, "/actuator/idempotency/needs_reconciliation?limit=abc");
            assertThat(limit.statusCode()).isEqualTo(400);
            assertThat(json(limit).path("message").asString()).contains("limit");
            assertThat(json(get(app, claimPath("m1"))).path("state").asString())
                    .as("nothing written")
                    .isEqualTo("needs_reconciliation");
            assertThat(json(get(app, claimPath("m1"))).path("history")).isEmpty();
        }
    }

    /**
     * A key holding '/' (standard base64 does) cannot travel in a path: servlet containers refuse an
     * encoded slash. The root forms carry scope and key as parameters instead.
     */
    @Test
    void aKeyWithASlashIsReadResolvedAndForgottenThroughTheRootForms() throws Exception {
        try (ConfigurableApplicationContext app = start(
                "management.endpoints.web.exposure.include=idempotency",
                "management.endpoint.idempotency.access=unrestricted")) {
            String key = "b64/+key==";
            needingReconciliation(app, key);
            String query = "?scope=" + URLEncoder.encode(scope.value(), StandardCharsets.UTF_8) + "&key="
                    + URLEncoder.encode(key, StandardCharsets.UTF_8);
            HttpResponse<String> seen = get(app, "/actuator/idempotency" + query);
            assertThat(seen.statusCode()).as(seen.body()).isEqualTo(200);
            assertThat(json(seen).path("state").asString()).isEqualTo("needs_reconciliation");
            HttpResponse<String> onlyScope =
                    get(app, "/actuator/idempotency?scope=" + URLEncoder.encode(scope.value(), StandardCharsets.UTF_8));
            assertThat(onlyScope.statusCode()).isEqualTo(400);
            assertThat(json(onlyScope).path("message").asString()).contains("key is required");

            HttpResponse<String> resolved = send(
                    app,
                    "POST",
                    "/actuator/idempotency",
                    "{\"scope\": \"" + scope.value() + "\", \"key\": \"" + key + "\", \"outcome\": \"refused\","
                            + " \"code\": \"not-paid\", \"message\": \"not on the statement\", " + note("dan", "x")
                            + "}");
            assertThat(resolved.statusCode()).as(resolved.body()).isEqualTo(200);
            assertThat(json(resolved).path("state").asString()).isEqualTo("failed");

            HttpResponse<String> forgotten =
                    send(app, "DELETE", "/actuator/idempotency" + query + "&operator=dan&reason=retry%20it", null);
            assertThat(forgotten.statusCode()).as(forgotten.body()).isEqualTo(200);
            assertThat(get(app, "/actuator/idempotency" + query).statusCode()).isEqualTo(404);
            HttpResponse<String> noKey = send(app, "POST", "/actuator/idempotency", "{\"outcome\": \"refused\"}");
            assertThat(noKey.statusCode()).isEqualTo(400);
            assertThat(json(noKey).path("message").asString()).contains("scope is required");
        }
    }

    @Test
    void healthIsUpWithinTheThresholdsAndWarnsPastThemWithoutFailingTheApplication() throws Exception {
        try (ConfigurableApplicationContext app = start()) {
            JsonNode up = json(get(app, "/actuator/health"));
            assertThat(up.path("components").path("idempotency").path("status").asString())
                    .isEqualTo("UP");
            needingReconciliation(app, "h1");
            HttpResponse<String> warned = get(app, "/actuator/health");
            JsonNode health = json(warned);
            JsonNode component = health.path("components").path("idempotency");
            assertThat(component.path("status").asString()).isEqualTo("WARNING");
            assertThat(component.path("details").path("needingReconciliation").asLong())
                    .isEqualTo(1);
            assertThat(component.path("details").path("reconciliation").asString())
                    .contains("1 claim(s) wait for an operator");
            // the default aggregation leaves WARNING out: the application stays UP, nothing restarts it
            assertThat(health.path("status").asString()).isEqualTo("UP");
            assertThat(warned.statusCode()).isEqualTo(200);
        }
        try (ConfigurableApplicationContext app =
                start("idemtx.health.exceeded-status=DOWN", "idemtx.health.max-needing-reconciliation=1")) {
            needingReconciliation(app, "h2");
            assertThat(json(get(app, "/actuator/health")).path("status").asString())
                    .as("one is within max-needing-reconciliation=1")
                    .isEqualTo("UP");
            needingReconciliation(app, "h3");
            HttpResponse<String> down = get(app, "/actuator/health");
            assertThat(json(down).path("status").asString()).isEqualTo("DOWN");
            assertThat(down.statusCode()).isEqualTo(503);
        }
        try (ConfigurableApplicationContext app = start("management.health.idempotency.enabled=false")) {
            assertThat(app.getBeansOfType(IdempotencyHealthIndicator.class)).isEmpty();
        }
    }

    @Test
    void anInFlightClaimOlderThanTheThresholdIsReportedWithItsAge() throws Exception {
        try (ConfigurableApplicationContext app = start()) {
            @SuppressWarnings("unchecked")
            ExternalEffect<Payout, Paid> payout = app.getBean(ExternalEffect.class);
            payout.run(scope, IdempotencyKey.of("old"), Fingerprint.sha256("old"), new Payout("acc", 1));
            ClaimAdmin admin = app.getBean(ClaimAdmin.class);
            IdempotencyHealthIndicator now =
                    new IdempotencyHealthIndicator(admin, 0, Duration.ofMinutes(15), "WARNING", Clock.systemUTC());
            assertThat(now.health(true).getStatus()).isEqualTo(Status.UP);
            // the same claim seen an hour later
            IdempotencyHealthIndicator later = new IdempotencyHealthIndicator(
                    admin, 0, Duration.ofMinutes(15), "WARNING", Clock.offset(Clock.systemUTC(), Duration.ofHours(1)));
            Health health = later.health(true);
            assertThat(health.getStatus()).isEqualTo(new Status("WARNING"));
            assertThat(health.getDetails().get("inFlight")).isEqualTo(1L);
            assertThat((String) health.getDetails().get("inFlightAge")).contains("is the recovery running?");
        }
    }

    @Test
    void badThresholdsAreRefusedNamingTheProperty() {
        ClaimAdmin admin = ClaimAdmin.builder(org.jooq.impl.DSL.using(org.jooq.SQLDialect.POSTGRES))
                .build();
        org.assertj.core.api.Assertions.assertThatThrownBy(() ->
                        new IdempotencyHealthIndicator(admin, -1, Duration.ofMinutes(1), "WARNING", Clock.systemUTC()))
                .hasMessageContaining("idemtx.health.max-needing-reconciliation");
        org.assertj.core.api.Assertions.assertThatThrownBy(
                        () -> new IdempotencyHealthIndicator(admin, 0, Duration.ZERO, "WARNING", Clock.systemUTC()))
                .hasMessageContaining("idemtx.health.max-in-flight-age");
        org.assertj.core.api.Assertions.assertThatThrownBy(() ->
                        new IdempotencyHealthIndicator(admin, 0, Duration.ofMinutes(1), "not ok!", Clock.systemUTC()))
                .hasMessageContaining("idemtx.health.exceeded-status");
    }
}
