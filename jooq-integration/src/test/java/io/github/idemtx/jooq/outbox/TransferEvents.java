package io.github.idemtx.jooq.outbox;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import org.jooq.DSLContext;

/** docs/outbox.md's example, run by OutboxDocsExampleTest: a transfer that announces itself through the outbox. */
final class TransferEvents {

    private final String schema;

    TransferEvents(IdempotentTransaction<String> transfers, Outbox outbox, String schema) {
        this.transfers = transfers;
        this.outbox = outbox;
        this.schema = schema;
    }

    // [docs/outbox.md: add]
    private final IdempotentTransaction<String> transfers;
    private final Outbox outbox; // Outbox.create(dsl): immutable, thread-safe

    Outcome<String> transfer(Scope scope, IdempotencyKey key, String from, String to, long cents) {
        Fingerprint fingerprint = Fingerprint.sha256(from + ">" + to + ":" + cents);
        return transfers.run(scope, key, fingerprint, tx -> {
            String transferId = book(tx, from, to, cents); // the business write, through tx
            outbox.add(
                    tx,
                    OutboxMessage.builder("transfer-applied", "ledger.events", json(transferId, cents))
                            .orderingKey(from) // one account's events in the order they commit
                            .header("content-type", "application/json")
                            .build());
            return transferId; // the message commits with the transfer and the claim, or not at all
        });
    }
    // [docs/outbox.md: end add]

    // [docs/outbox.md: relay]
    static OutboxRelay startRelay(DSLContext dsl, String schema, URI eventsEndpoint) {
        OutboxTransport http = HttpOutboxTransport.create(
                HttpClient.newHttpClient(), destination -> eventsEndpoint, Duration.ofSeconds(5));
        OutboxRelay relay = OutboxRelay.builder(dsl, http)
                .schema(schema) // where the migrations were applied, as for IdempotentTransaction
                .maxAttempts(10) // then kept as failed, for an operator
                .retention(Duration.ofDays(7)) // delivered messages are purged after a week
                .build();
        relay.start(); // and relay.close() on shutdown: finishes the message being sent
        return relay;
    }
    // [docs/outbox.md: end relay]

    private String book(DSLContext tx, String from, String to, long cents) {
        return tx.resultQuery(
                        "INSERT INTO " + schema + ".outbox_transfer (source, target, cents) VALUES (?, ?, ?)"
                                + " RETURNING id::text",
                        from,
                        to,
                        cents)
                .fetchSingle()
                .get(0, String.class);
    }

    private static byte[] json(String transferId, long cents) {
        return ("{\"transfer\":\"" + transferId + "\",\"cents\":" + cents + "}").getBytes(UTF_8);
    }
}
