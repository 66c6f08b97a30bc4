package io.github.idemtx.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.groups.Tuple.tuple;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GoalsTest {

    @Test
    void defaultsAreTheIssuesNumbers() {
        assertThat(Goals.parse("")).isEqualTo(Goals.DEFAULTS);
        assertThat(Goals.DEFAULTS.describe())
                .containsEntry("claim/floor", 0.95)
                .containsEntry("claim-p99/floor-p99", 1.10)
                .containsEntry("claim/three-tx", 1.65)
                .containsEntry("replay/bare", 3.0)
                .containsEntry("mixed/best-fixed", 0.97)
                .containsEntry("remote-effect/remote-floor", 0.95)
                .containsEntry("grown-rows", 10_000_000L);
    }

    @Test
    void theReportStatesTheGoalsItWasGiven() {
        Goals goals = Goals.parse("claim/three-tx=2.5, grown/empty=0.8,grown-rows=1_000_000");
        Report report = new Report(List.of(), Map.of(), Map.of(), List.of(), Map.of(), goals);

        assertThat(report.goals())
                .extracting(Report.Goal::name, Report.Goal::target)
                .contains(
                        tuple("claim/three-tx at 8 clients", ">= 2.50"),
                        tuple("claim ratio with 1M rows / empty table", ">= 0.80"));
    }

    @Test
    void refusesUnknownGoalsAndValuesThatAreNoPositiveNumbers() {
        assertThatThrownBy(() -> Goals.parse("claim/flor=1"))
                .hasMessageContaining("claim/flor")
                .hasMessageContaining("claim/floor");
        assertThatThrownBy(() -> Goals.parse("replay/bare=fast")).hasMessageContaining("--goals");
        assertThatThrownBy(() -> Goals.parse("replay/bare=-1")).hasMessageContaining("positive");
        assertThatThrownBy(() -> Goals.parse("replay/bare")).hasMessageContaining("name=value");
    }
}
