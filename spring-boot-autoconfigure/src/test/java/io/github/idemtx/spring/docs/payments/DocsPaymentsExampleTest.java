package io.github.idemtx.spring.docs.payments;

import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.spring.sample.PaymentsApplication;
import io.github.idemtx.spring.web.IdempotencyKeyBodyFilter;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.context.WebApplicationContext;

/** docs/spring-boot.md's payments example, run: once, replayed, rejected, refused without a scope. */
@DatabaseTest
@SpringBootTest(classes = DocsPaymentsApplication.class)
@DirtiesContext // its pool closes with the class: the server is shared, its connections are not ours to keep
class DocsPaymentsExampleTest {

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        PaymentsApplication.databaseProperties().forEach((k, v) -> registry.add(k, () -> v));
        registry.add("spring.datasource.hikari.maximum-pool-size", () -> "2");
    }

    @Autowired
    WebApplicationContext context;

    private MockMvc mvc() {
        return MockMvcBuilders.webAppContextSetup(context)
                .addFilters(context.getBean(IdempotencyKeyBodyFilter.class))
                .build();
    }

    @Test
    void aPaymentIsCreatedOnceAndItsRetryReplaysIt() throws Exception {
        MockMvc mvc = mvc();
        String key = "\"" + UUID.randomUUID() + "\"";
        String body = "{\"amountCents\": 1250, \"reference\": \"docs-1\"}";
        String first = mvc.perform(post("/payments")
                        .principal(() -> "alice")
                        .header("Idempotency-Key", key)
                        .contentType("application/json")
                        .content(body))
                .andExpect(status().isCreated())
                .andExpect(header().doesNotExist("Idempotent-Replayed"))
                .andExpect(jsonPath("$.reference").value("docs-1"))
                .andReturn()
                .getResponse()
                .getContentAsString();
        mvc.perform(post("/payments")
                        .principal(() -> "alice")
                        .header("Idempotency-Key", key)
                        .contentType("application/json")
                        .content(body))
                .andExpect(status().isCreated())
                .andExpect(header().string("Idempotent-Replayed", "true"))
                .andExpect(org.springframework.test.web.servlet.result.MockMvcResultMatchers.content()
                        .json(first));
    }

    @Test
    void aRejectionIs422AndNoPrincipalIs401() throws Exception {
        MockMvc mvc = mvc();
        mvc.perform(post("/payments")
                        .principal(() -> "alice")
                        .header("Idempotency-Key", "\"" + UUID.randomUUID() + "\"")
                        .contentType("application/json")
                        .content("{\"amountCents\": -1, \"reference\": \"docs-2\"}"))
                .andExpect(status().isUnprocessableEntity())
                .andExpect(jsonPath("$.code").value("invalid-amount"));
        mvc.perform(post("/payments")
                        .header("Idempotency-Key", "\"" + UUID.randomUUID() + "\"")
                        .contentType("application/json")
                        .content("{\"amountCents\": 1, \"reference\": \"docs-3\"}"))
                .andExpect(status().isUnauthorized());
    }
}
