package io.github.idemtx.http;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.math.BigDecimal;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProblemTest {

    @Test
    void acceptsEveryClientAndServerErrorStatusAndNothingElse() {
        assertThat(new Problem("t", "x", 400, "d", Map.of()).status()).isEqualTo(400);
        assertThat(new Problem("t", "x", 599, "d", Map.of()).status()).isEqualTo(599);
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new Problem("t", "x", 399, "d", Map.of()))
                .withMessage("a problem's status must be between 400 and 599, was 399");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new Problem("t", "x", 600, "d", Map.of()))
                .withMessage("a problem's status must be between 400 and 599, was 600");
    }

    @Test
    void writesExtensionsSortedByNameWithDecimalsInPlainNotation() {
        Problem problem = new Problem(
                "urn:t",
                "Title",
                422,
                "a \"quoted\" detail",
                Map.of("z", "last", "balance", new BigDecimal("1E+3"), "count", 3, "final", true));

        assertThat(new String(problem.toJson(), UTF_8))
                .isEqualTo(
                        "{\"type\":\"urn:t\",\"title\":\"Title\",\"status\":422,"
                                + "\"detail\":\"a \\\"quoted\\\" detail\",\"balance\":1000,\"count\":3,\"final\":true,\"z\":\"last\"}");
    }
}
