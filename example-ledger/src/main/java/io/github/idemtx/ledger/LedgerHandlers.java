package io.github.idemtx.ledger;

import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.RemoteOutcome;
import io.github.idemtx.http.IdempotentResponses;
import io.github.idemtx.http.StoredResponse;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import org.jooq.DSLContext;

/**
 * One method per endpoint. Every POST is one call to the library: {@link IdempotentTransaction#run}
 * for the ledger's own writes (the claim, the write and the stored answer commit together), or the
 * payouts' {@code ExternalEffect} for the bank. Reads go straight to the ledger. Routing, the HTTP
 * plumbing and the JSON are elsewhere ({@link LedgerRoutes}, {@link PostRequest}, {@link LedgerJson}).
 */
final class LedgerHandlers {

    static final Set<String> PAYOUT_STATES =
            Set.of("in_flight", "paid", "refused", "needs_reconciliation", "awaiting_statement");

    private final DSLContext dsl;
    private final Ledger ledger;
    private final IdempotentTransaction<StoredResponse> idempotent;
    private final Payouts payouts; // null when no bank is configured

    LedgerHandlers(DSLContext dsl, Ledger ledger, IdempotentTransaction<StoredResponse> idempotent, Payouts payouts) {
        this.dsl = dsl;
        this.ledger = ledger;
        this.idempotent = idempotent;
        this.payouts = payouts;
    }

    // ---------------------------------------------------------------- writes, each through the library

    /** {@code POST /accounts {"currency": "BRL"}}. */
    StoredResponse openAccount(PostRequest post) {
        Outcome<StoredResponse> outcome =
                idempotent.run(post.scope(), post.key(), post.fingerprint(), post.work((body, tx) -> {
                    String currency = LedgerJson.currency(body, "currency");
                    return LedgerJson.account(ledger.openAccount(tx, post.tenant(), currency), 201);
                }));
        return IdempotentResponses.toResponse(outcome, LedgerJson::rejection);
    }

    /** {@code POST /accounts/{account}/deposits {"amount": "10.00"}}. */
    StoredResponse deposit(PostRequest post, String account) {
        Outcome<StoredResponse> outcome =
                idempotent.run(post.scope(), post.key(), post.fingerprint(), post.work((body, tx) -> {
                    UUID to = LedgerJson.accountId(account);
                    return LedgerJson.transfer(
                            ledger.deposit(tx, post.tenant(), to, LedgerJson.money(body, "amount")), 201);
                }));
        return IdempotentResponses.toResponse(outcome, LedgerJson::rejection);
    }

    /** {@code POST /transfers {"from": account, "to": account, "amount": "10.00"}}. */
    StoredResponse transfer(PostRequest post) {
        Outcome<StoredResponse> outcome =
                idempotent.run(post.scope(), post.key(), post.fingerprint(), post.work((body, tx) -> {
                    UUID from = LedgerJson.accountId(body, "from");
                    UUID to = LedgerJson.accountId(body, "to");
                    return LedgerJson.transfer(
                            ledger.transfer(tx, post.tenant(), from, to, LedgerJson.money(body, "amount")), 201);
                }));
        return IdempotentResponses.toResponse(outcome, LedgerJson::rejection);
    }

    /**
     * {@code POST /payouts {"from": account, "amount": "10.00", "destination": "..."}}: the body is
     * checked before anything is claimed (a malformed one is a 400 that writes nothing); then the
     * payout runs through the external-effect door: claim and hold, the bank's call, the fenced record.
     */
    StoredResponse payout(PostRequest post) {
        Payouts.PayoutRequest request;
        try {
            request = new Payouts.PayoutRequest(
                    LedgerJson.accountId(post.body(), "from"),
                    LedgerJson.money(post.body(), "amount"),
                    LedgerJson.destination(post.body(), "destination"));
        } catch (Rejection e) {
            return LedgerJson.rejection(e.failure());
        }
        RemoteOutcome<String> outcome =
                payouts.pay(post.scope(), post.key(), post.fingerprint(), request); // ExternalEffect.run
        return IdempotentResponses.toResponse(asPayout(outcome, post), LedgerJson::rejection);
    }

    /** The outcome's charge id replaced by the payout as the ledger now holds it, the answer a client sees. */
    private RemoteOutcome<StoredResponse> asPayout(RemoteOutcome<String> outcome, PostRequest post) {
        return switch (outcome) {
            case Outcome.Executed<String> e -> new Outcome.Executed<>(paid(post));
            case Outcome.Replayed<String> r -> new Outcome.Replayed<>(paid(post), r.completedAt());
            case Outcome.Rejected<String> f -> new Outcome.Rejected<>(f.failure(), f.recordedAt(), f.replayed());
            case Outcome.FingerprintMismatch<String> m -> new Outcome.FingerprintMismatch<>();
            case Outcome.InProgress<String> p -> new Outcome.InProgress<>(p.retryAfter());
            case RemoteOutcome.Unknown<String> u -> {
                System.err.println("ledger: payout of key " + post.key() + " outcome unknown: " + u.reason());
                yield new RemoteOutcome.Unknown<>(u.retryAfter(), u.reason());
            }
            case RemoteOutcome.NeedsReconciliation<String> n -> new RemoteOutcome.NeedsReconciliation<>(n.since());
        };
    }

    // ---------------------------------------------------------------- reads

    StoredResponse account(String tenant, String id) {
        return LedgerJson.uuid(id)
                .flatMap(uuid -> ledger.account(dsl, tenant, uuid))
                .map(a -> LedgerJson.account(a, 200))
                .orElseGet(() -> LedgerJson.notFound("account"));
    }

    StoredResponse transfer(String tenant, String id) {
        return LedgerJson.uuid(id)
                .flatMap(uuid -> ledger.transfer(dsl, tenant, uuid))
                .map(t -> LedgerJson.transfer(t, 200))
                .orElseGet(() -> LedgerJson.notFound("transfer"));
    }

    StoredResponse payout(String tenant, String id) {
        if (payouts == null) {
            return payoutsOff();
        }
        return LedgerJson.uuid(id)
                .flatMap(uuid -> payouts.find(dsl, tenant, uuid))
                .map(p -> LedgerJson.payout(p, 200))
                .orElseGet(() -> LedgerJson.notFound("payout"));
    }

    /** {@code GET /payouts?state=...}; {@code needs_reconciliation} is the operators' list. */
    StoredResponse payouts(String tenant, String state) {
        if (payouts == null) {
            return payoutsOff();
        }
        if (state == null || !PAYOUT_STATES.contains(state)) {
            return LedgerJson.problem(
                    400, "invalid_request", "Invalid request", "state must be one of " + new TreeSet<>(PAYOUT_STATES));
        }
        List<Payouts.Payout> found = payouts.list(dsl, tenant, state, 1000);
        return LedgerJson.payouts(found);
    }

    /** The key's payout as the ledger now holds it: its latest, the one the key's claim answers for. */
    private StoredResponse paid(PostRequest post) {
        return payouts.latest(dsl, post.scope(), post.key())
                .flatMap(id -> payouts.find(dsl, post.tenant(), id))
                .map(p -> LedgerJson.payout(p, 201))
                .orElseThrow(
                        () -> new IllegalStateException("payout of key " + post.key() + " recorded but not found"));
    }

    /** Whether a bank is configured; without one every payout endpoint answers {@link #payoutsOff()}. */
    boolean payoutsOn() {
        return payouts != null;
    }

    static StoredResponse payoutsOff() {
        return LedgerJson.problem(
                503,
                "payouts_unavailable",
                "Payouts unavailable",
                "this ledger has no bank configured (LEDGER_BANK_URL)");
    }
}
