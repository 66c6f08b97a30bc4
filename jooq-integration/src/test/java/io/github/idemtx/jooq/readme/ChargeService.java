package io.github.idemtx.jooq.readme;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.EffectRecovery;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.Remote;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.jooq.DSLContext;

/**
 * Charges through a payment provider, each at most once per (tenant, key): docs/external-effects.md
 * shows the region between its markers verbatim, and {@code ChargeServiceTest} runs it.
 */
public class ChargeService implements AutoCloseable {

    public record ChargeRequest(String account, BigDecimal amount) {}

    public record Charge(String id, BigDecimal amount) {}

    /** The payment provider's client: it deduplicates requests by the key sent with them, and finds one by it. */
    public interface Provider {
        Remote.Reply<Charge> charge(ChargeRequest request, String key, Instant deadline) throws Exception;

        Remote.Lookup<Charge> find(String key) throws Exception;
    }

    private static final System.Logger LOG = System.getLogger(ChargeService.class.getName());

    private final String schema;

    // [docs/external-effects.md: charges]
    private final ExternalEffect<ChargeRequest, Charge> charges; // immutable, thread-safe: one per effect name
    private final AutoCloseable recovering; // the recoverer's handle: closed on shutdown, below

    public ChargeService(DSLContext dsl, String schema, Provider provider) {
        this.schema = schema;
        this.charges = ExternalEffect.builder(
                        dsl,
                        "charge", // unique per effect: the downstream key starts with it
                        ResultCodec.json(ChargeRequest.class),
                        ResultCodec.json(Charge.class),
                        new Remote.Holding<ChargeRequest, Charge>() {
                            @Override // committed with the claim, before the call
                            public void before(DSLContext tx, Remote.Intent<ChargeRequest> i) {
                                hold(tx, i);
                            }

                            @Override // outside any transaction; a throw means "outcome unknown"
                            public Remote.Reply<Charge> call(Remote.Intent<ChargeRequest> i, Instant deadline)
                                    throws Exception {
                                return provider.charge(i.request(), i.downstreamKey(), deadline);
                            }

                            @Override // found / refused / absent / unknown
                            public Remote.Lookup<Charge> lookup(Remote.Intent<ChargeRequest> i) throws Exception {
                                return provider.find(i.downstreamKey());
                            }

                            @Override // committed with the result
                            public void after(DSLContext tx, Remote.Intent<ChargeRequest> i, Charge charge) {
                                settleHold(tx, i, "charged");
                            }

                            @Override // committed with the recorded refusal
                            public void refused(DSLContext tx, Remote.Intent<ChargeRequest> i, Failure failure) {
                                settleHold(tx, i, "released");
                            }
                        })
                .schema(schema)
                .lease(Duration.ofSeconds(30))
                .readAfterWrite(false) // the provider's lookup may lag its charges: "absent" is not proof
                .build();
        // claims whose outcome is unknown, looked up and settled in the background
        this.recovering = charges.recovery()
                .schedule(
                        Duration.ofSeconds(10),
                        100,
                        pass -> LOG.log(System.Logger.Level.INFO, "recovered charges: " + pass.counts()));
    }

    public RemoteOutcome<Charge> charge(Scope scope, IdempotencyKey key, ChargeRequest request) {
        Fingerprint fingerprint =
                Fingerprint.sha256(request.account() + "|" + request.amount().toPlainString());
        return charges.run(scope, key, fingerprint, request);
    }

    /** For operators: claims whose every lookup went unanswered; ClaimAdmin's resolveApplied / resolveRefused settle them. */
    public List<EffectRecovery.Unsettled<ChargeRequest>> needingReconciliation() {
        return charges.recovery().needingReconciliation(100);
    }

    @Override
    public void close() throws Exception {
        recovering.close(); // lets the claim being settled finish, hands the rest of its batch back
    }
    // [docs/external-effects.md: end charges]

    private void hold(DSLContext tx, Remote.Intent<ChargeRequest> i) {
        tx.execute(
                "INSERT INTO " + schema
                        + ".charge_hold (downstream_key, account, amount, state) VALUES (?, ?, ?, 'held')",
                i.downstreamKey(),
                i.request().account(),
                i.request().amount());
    }

    private void settleHold(DSLContext tx, Remote.Intent<ChargeRequest> i, String state) {
        tx.execute(
                "UPDATE " + schema + ".charge_hold SET state = ? WHERE downstream_key = ?", state, i.downstreamKey());
    }

    /** Once at start-up, after the claim table's migration: the holds' table. */
    public static void createHoldTable(DSLContext dsl, String schema) {
        dsl.execute("CREATE TABLE IF NOT EXISTS " + schema + ".charge_hold (downstream_key text PRIMARY KEY,"
                + " account text NOT NULL, amount numeric(12, 2) NOT NULL, state text NOT NULL)");
    }
}
