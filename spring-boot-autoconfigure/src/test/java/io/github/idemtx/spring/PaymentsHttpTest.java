package io.github.idemtx.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.db.testing.Concurrently;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.spring.sample.PaymentsApplication;
import io.github.idemtx.spring.web.IdempotencyKeyBodyFilter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.boot.web.servlet.ServletContextInitializerBeans;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.Ordered;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The sample payments service over real HTTP: concurrent duplicates, replays, a key reused for
 * another request, malformed keys, no principal, a rejection, and a method that fails after run.
 */
@DatabaseTest
@SpringBootTest(classes = PaymentsApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class PaymentsHttpTest {

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        PaymentsApplication.databaseProperties().forEach((k, v) -> registry.add(k, () -> v));
    }

    @LocalServerPort
    int port;

    private final HttpClient http = HttpClient.newHttpClient();
    private final String user = "user-" + UUID.randomUUID();

    private HttpResponse<String> post(String user, String key, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/payments"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (user != null) {
            b.header("Authorization", "Bearer " + user);
        }
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    private int payments(String reference) throws SQLException {
        try (Connection c = TestDatabase.get().connect();
                PreparedStatement ps = c.prepareStatement("select count(*) from "
                        + TestDatabase.get().schema() + ".payment where payer = ? and reference = ?")) {
            ps.setString(1, user);
            ps.setString(2, reference);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    @Test
    void aPaymentIsCreatedOnceAndItsRetryReplaysTheSameAnswer() throws Exception {
        String key = key();
        HttpResponse<String> first = post(user, key, "{\"amountCents\": 1250, \"reference\": \"inv-1\"}");
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        // the same request, formatted and ordered differently: the same JSON, so a replay
        HttpResponse<String> retry = post(user, key, "{ \"reference\":\"inv-1\",\n \"amountCents\":1250 }");
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(payments("inv-1")).isEqualTo(1);

        String id = first.body().replaceAll(".*\"id\":(\\d+).*", "$1");
        HttpResponse<String> get = http.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/payments/" + id))
                        .header("Authorization", "Bearer " + user)
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(get.statusCode()).isEqualTo(200);
        assertThat(get.body()).contains("\"reference\":\"inv-1\"");
    }

    @Test
    void concurrentDuplicatesMakeOnePaymentAndEveryAnswerIsThatPaymentOrARetryLater() throws Exception {
        String key = key();
        List<Callable<HttpResponse<String>>> tasks = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            tasks.add(() -> post(user, key, "{\"amountCents\": 500, \"reference\": \"dup\"}"));
        }
        List<Concurrently.Result<HttpResponse<String>>> results = Concurrently.run(tasks);
        assertThat(results).extracting(Concurrently.Result::error).containsOnlyNulls();
        Map<Integer, List<HttpResponse<String>>> byStatus = results.stream()
                .map(Concurrently.Result::value)
                .collect(Collectors.groupingBy(HttpResponse::statusCode));
        assertThat(byStatus.keySet()).isSubsetOf(201, 409);
        List<HttpResponse<String>> created = byStatus.get(201);
        assertThat(created).isNotEmpty();
        assertThat(created)
                .extracting(HttpResponse::body)
                .containsOnly(created.get(0).body());
        assertThat(created.stream()
                        .filter(r ->
                                r.headers().firstValue("Idempotent-Replayed").isEmpty()))
                .as("exactly one executed")
                .hasSize(1);
        byStatus.getOrDefault(409, List.of())
                .forEach(r -> assertThat(r.headers().firstValue("Retry-After")).isPresent());
        assertThat(payments("dup")).isEqualTo(1);
    }

    @Test
    void theSameKeyForAnotherRequestIs422AndNothingIsWritten() throws Exception {
        String key = key();
        assertThat(post(user, key, "{\"amountCents\": 100, \"reference\": \"a\"}")
                        .statusCode())
                .isEqualTo(201);
        HttpResponse<String> other = post(user, key, "{\"amountCents\": 999, \"reference\": \"b\"}");
        assertThat(other.statusCode()).isEqualTo(422);
        assertThat(other.headers().firstValue("Content-Type"))
                .hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
        assertThat(other.body()).contains("idempotency-key-reused");
        assertThat(payments("b")).isZero();
    }

    @Test
    void aMissingOrMalformedKeyIsA400ProblemAndNothingIsWritten() throws Exception {
        HttpResponse<String> missing = post(user, null, "{\"amountCents\": 100, \"reference\": \"nokey\"}");
        assertThat(missing.statusCode()).isEqualTo(400);
        assertThat(missing.body()).contains("invalid-idempotency-key").contains("MISSING");
        HttpResponse<String> bool = post(user, "?1", "{\"amountCents\": 100, \"reference\": \"nokey\"}");
        assertThat(bool.statusCode()).isEqualTo(400);
        assertThat(bool.body()).contains("NOT_A_STRING");
        HttpResponse<String> unterminated = post(user, "\"abc", "{\"amountCents\": 100, \"reference\": \"nokey\"}");
        assertThat(unterminated.statusCode()).isEqualTo(400);
        assertThat(unterminated.body()).contains("MALFORMED");
        assertThat(payments("nokey")).isZero();
    }

    @Test
    void invalidJsonIsA400ProblemAndNoPrincipalIsA401() throws Exception {
        HttpResponse<String> invalid = post(user, key(), "{\"amountCents\": 100, \"amountCents\": 200}");
        assertThat(invalid.statusCode()).isEqualTo(400);
        assertThat(invalid.body()).contains("invalid-json");
        HttpResponse<String> anonymous = post(null, key(), "{\"amountCents\": 100, \"reference\": \"anon\"}");
        assertThat(anonymous.statusCode()).isEqualTo(401);
        assertThat(anonymous.body()).contains("unauthenticated");
    }

    @Test
    void aPrincipalNameThatIsNoScopeIsA400ProblemNamingWhatIsWrong() throws Exception {
        HttpResponse<String> tooLong =
                post("u".repeat(256), key(), "{\"amountCents\": 100, \"reference\": \"long-name\"}");
        assertThat(tooLong.statusCode()).isEqualTo(400);
        assertThat(tooLong.body())
                .contains("invalid-scope")
                .contains("the scope from the authenticated principal's name is not valid: scope must be at most 255"
                        + " characters, was 256");
        assertThat(payments("long-name")).isZero();
    }

    @Test
    void aBodyOverTheLimitIsA413ProblemWithItsInstanceLikeThe400() throws Exception {
        String big = "{\"amountCents\": 100, \"reference\": \"big\", \"pad\": \"" + "x".repeat(1024 * 1024) + "\"}";
        HttpResponse<String> tooLarge = post(user, key(), big);
        assertThat(tooLarge.statusCode()).isEqualTo(413);
        assertThat(tooLarge.headers().firstValue("Content-Type"))
                .hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
        assertThat(tooLarge.body()).contains("body-too-large").contains("\"instance\":\"/payments\"");
        assertThat(payments("big")).isZero();
        HttpResponse<String> invalid = post(user, key(), "{\"amountCents\": 100, \"amountCents\": 200}");
        assertThat(invalid.statusCode()).isEqualTo(400);
        assertThat(invalid.body()).contains("\"instance\":\"/payments\"");
    }

    @Autowired
    ConfigurableApplicationContext context;

    @Test
    void theBodyFilterRunsAfterSpringSecuritysFilterChain() {
        // as docs/spring-boot.md says: unordered, so last, after Security's chain at -100
        // (SecurityProperties.DEFAULT_FILTER_ORDER) and the sample's own authentication filter
        List<Integer> orders = new ServletContextInitializerBeans(context.getBeanFactory())
                .stream()
                        .filter(i -> i instanceof FilterRegistrationBean<?> r
                                && r.getFilter() instanceof IdempotencyKeyBodyFilter)
                        .map(i -> ((FilterRegistrationBean<?>) i).getOrder())
                        .toList();
        assertThat(orders).containsExactly(Ordered.LOWEST_PRECEDENCE);
    }

    @Test
    void aRejectionIsA422ProblemAndItsRetryReplaysIt() throws Exception {
        String key = key();
        HttpResponse<String> rejected = post(user, key, "{\"amountCents\": -5, \"reference\": \"neg\"}");
        assertThat(rejected.statusCode()).isEqualTo(422);
        assertThat(rejected.body()).contains("invalid-amount");
        HttpResponse<String> again = post(user, key, "{\"amountCents\": -5, \"reference\": \"neg\"}");
        assertThat(again.statusCode()).isEqualTo(422);
        assertThat(again.headers().firstValue("Idempotent-Replayed")).contains("true");
        assertThat(payments("neg")).isZero();
    }

    @Test
    void aMethodThatFailsAfterRunLeavesNeitherClaimNorPaymentAndTheRetryExecutes() throws Exception {
        String key = key();
        HttpResponse<String> failed = post(user, key, "{\"amountCents\": 700, \"reference\": \"fail-after\"}");
        assertThat(failed.statusCode()).isEqualTo(500);
        assertThat(payments("fail-after")).isZero();
        try (Connection c = TestDatabase.get().connect();
                PreparedStatement ps = c.prepareStatement("select count(*) from "
                        + TestDatabase.get().schema() + ".idempotency_claim where scope = ? and idem_key = ?")) {
            ps.setString(1, user);
            ps.setString(2, key.substring(1, key.length() - 1));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertThat(rs.getInt(1))
                        .as("the claim rolled back with the method")
                        .isZero();
            }
        }
        // the same key with a request that succeeds is not a mismatch: nothing was recorded
        HttpResponse<String> retry = post(user, key, "{\"amountCents\": 700, \"reference\": \"after-failure\"}");
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
    }

    @Test
    void keysOfOneUserNeverAnswerAnother() throws Exception {
        String key = key();
        HttpResponse<String> mine = post(user, key, "{\"amountCents\": 300, \"reference\": \"tenant\"}");
        HttpResponse<String> theirs = post("other-" + user, key, "{\"amountCents\": 300, \"reference\": \"tenant\"}");
        assertThat(mine.statusCode()).isEqualTo(201);
        assertThat(theirs.statusCode()).isEqualTo(201);
        assertThat(theirs.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(theirs.body()).isNotEqualTo(mine.body());
    }
}
