package io.github.idemtx.ledger.storm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.LocalBroker;
import io.github.idemtx.db.testing.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The short version of {@code storm --queue} that CI runs against the machine's RabbitMQ: the
 * ledger's queue consumers SIGKILLed, halting between a commit and its acknowledgement, the broker
 * closing every connection; then every invariant.
 */
@DatabaseTest
class QueueStormTest {

    @Test
    void everyIntentIsAppliedOnceThroughKillsHaltsAndBrokerCloses() throws Exception {
        LocalBroker.assumeAvailable();
        TestDatabase db = TestDatabase.get();
        String schema = db.schema() + "_qstorm";
        List<String> args = new ArrayList<>(List.of(
                "--queue",
                "--intents=300",
                "--consumers=2",
                "--kills=3",
                "--closes=2",
                "--seed=7",
                "--schema=" + schema,
                "--amqp-url=" + LocalBroker.url(),
                "--db-url=" + db.serverUrl(),
                "--db-user=" + (db.user() == null ? "postgres" : db.user())));
        if (db.password() != null) {
            args.add("--db-password=" + db.password());
        }
        try {
            QueueStorm.Report report = QueueStorm.run(QueueStorm.parse(args.toArray(String[]::new)), System.out);
            System.out.print(report.render());
            assertThat(report.invariants())
                    .isNotEmpty()
                    .allSatisfy((name, holds) -> assertThat(holds).as(name).isTrue());
            assertThat(report.notes()).as("every broker close was made").isEmpty();
            assertThat(report.faults()).containsEntry("SIGKILLs", 3).containsEntry("broker closes", 2);
            // a consumer process halts at its 30th executed transfer: with ~280 executed over at most 5 lives
            // that end otherwise (2 starts + 3 kills), at least one halt between commit and acknowledgement is certain
            assertThat(report.faults().get("halts before answer")
                            + report.faults().get("halts before ack"))
                    .as("halts between a commit and its acknowledgement")
                    .isPositive();
            assertThat(report.counts().get("applied")).isPositive();
            assertThat(report.counts().get("refused")).isPositive();
            assertThat(report.counts().get("dead-lettered")).isPositive();
            assertThat(report.counts().get("replays"))
                    .as("redeliveries and duplicates replayed")
                    .isPositive();
        } finally {
            db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    @Test
    void badFlagsAreRefusedWithTheirName() {
        assertThatThrownBy(() -> QueueStorm.parse(new String[] {"--queue", "--intents=0"}))
                .hasMessageContaining("--intents");
        assertThatThrownBy(() -> QueueStorm.parse(new String[] {"--queue", "--bogus=1"}))
                .hasMessageContaining("--bogus");
        assertThatThrownBy(() -> QueueStorm.parse(new String[] {"--queue", "--queue-name=a b"}))
                .hasMessageContaining("--queue-name");
        assertThatThrownBy(() -> QueueStorm.parse(new String[] {"--queue", "--amqp-url=http://x"}))
                .hasMessageContaining("--amqp-url");
    }

    @Test
    void aMissingBrokerIsNamedWithHowToStartOne() {
        assertThatThrownBy(() -> QueueStorm.run(
                        QueueStorm.parse(new String[] {"--queue", "--amqp-url=amqp://guest:guest@127.0.0.1:1"}),
                        System.out))
                .isInstanceOf(QueueStorm.NoBrokerException.class)
                .hasMessageContaining("no RabbitMQ answers at 127.0.0.1:1")
                .hasMessageContaining("rabbitmq-server -detached");
    }
}
