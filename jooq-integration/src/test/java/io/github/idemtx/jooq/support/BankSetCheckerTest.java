package io.github.idemtx.jooq.support;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.RetriesExhaustedException;
import io.github.idemtx.core.Scope;
import java.net.SocketException;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jooq.exception.DataAccessException;
import org.junit.jupiter.api.Test;

/** The checker itself, on made-up histories and databases (no database): it must see every kind of violation. */
public class BankSetCheckerTest {

    private final BankSetChecker checker = new BankSetChecker();
    private final Map<Integer, Long> opened = Map.of(0, 100L, 1, 100L);
    private final Map<Integer, Long> balances = new HashMap<>(opened);
    private final List<Bank.TransferRow> transfers = new ArrayList<>();
    private final List<Bank.PostingRow> postings = new ArrayList<>();
    private final Map<String, Bank.ClaimRow> claims = new HashMap<>();

    private static BankSetChecker.Intent intent(String key, long amount) {
        return new BankSetChecker.Intent(IdempotencyKey.of(key), 0, 1, amount);
    }

    /** The database after {@code intent} was applied as transfer {@code id}. */
    private void applied(long id, BankSetChecker.Intent intent) {
        transfers.add(new Bank.TransferRow(id, intent.key().value(), intent.from(), intent.to(), intent.amount()));
        postings.add(new Bank.PostingRow(id, intent.from(), -intent.amount()));
        postings.add(new Bank.PostingRow(id, intent.to(), intent.amount()));
        balances.merge(intent.from(), -intent.amount(), Long::sum);
        balances.merge(intent.to(), intent.amount(), Long::sum);
        claims.put(
                intent.key().value(),
                new Bank.ClaimRow(
                        intent.key().value(), (short) 1, intent.fingerprint().bytes()));
    }

    private static Outcome<String> executed(long id) {
        return new Outcome.Executed<>("transfer-" + id);
    }

    private static Outcome<String> replayed(long id) {
        return new Outcome.Replayed<>("transfer-" + id, Instant.now());
    }

    private static RuntimeException connectionLost() {
        return new DataAccessException(
                "I/O error", new SQLException("An I/O error occurred", "08006", new SocketException("reset")));
    }

    private static RuntimeException exhausted(BankSetChecker.Intent intent) {
        return new RetriesExhaustedException(
                Scope.of("s"), intent.key(), 3, new SQLException("could not serialize", "40001"));
    }

    private BankSetChecker.Report check() {
        return checker.check(new Bank.Snapshot(opened, balances, transfers, postings, claims), Map.of());
    }

    @Test
    public void aConsistentHistoryPasses() {
        BankSetChecker.Intent a = intent("a", 10);
        BankSetChecker.Intent b = intent("b", 20);
        BankSetChecker.Intent c = intent("c", 30);
        BankSetChecker.Intent d = intent("d", 40);
        BankSetChecker.Intent e = intent("e", 50);
        applied(1, a);
        applied(2, b);
        applied(3, d);
        checker.record(a, executed(1));
        checker.record(a, replayed(1));
        checker.record(b, connectionLost()); // committed, the answer was lost: recovered
        checker.record(b, replayed(2));
        checker.record(c, exhausted(c)); // nothing committed
        checker.record(d, connectionLost()); // present, never acknowledged
        checker.record(e, connectionLost()); // absent, never acknowledged
        checker.record(intent("a", 11), new Outcome.FingerprintMismatch<>());

        BankSetChecker.Report report = check();

        assertThat(report.violations()).isEmpty();
        assertThat(report.summary())
                .contains(
                        "2 acknowledged",
                        "1 present after unknown outcomes",
                        "1 absent after unknown outcomes",
                        "1 absent after definite failures");
    }

    @Test
    public void seesADoubleApplicationALostAcknowledgementAndAnUnaskedTransfer() {
        BankSetChecker.Intent a = intent("a", 10);
        BankSetChecker.Intent b = intent("b", 20);
        applied(1, a);
        applied(2, a);
        applied(3, intent("nobody", 5));
        checker.record(a, executed(1));
        checker.record(a, executed(2));
        checker.record(b, replayed(7));

        assertThat(check().violations())
                .anyMatch(v -> v.contains("key a applied 2 times"))
                .anyMatch(v -> v.contains("key a was answered Executed 2 times"))
                .anyMatch(v -> v.contains("key b was acknowledged (REPLAYED) but is absent"))
                .anyMatch(v -> v.contains("transfer under key nobody, which no caller sent"));
    }

    @Test
    public void seesMoneyThatAppearedOrVanishedAndBalancesThatDisagreeWithThePostings() {
        BankSetChecker.Intent a = intent("a", 10);
        applied(1, a);
        checker.record(a, executed(1));
        balances.put(1, balances.get(1) + 10); // a lost update in reverse: money from nowhere

        assertThat(check().violations())
                .anyMatch(v -> v.startsWith("total balance 210, opened with 200"))
                .anyMatch(v -> v.startsWith("account 1 holds 120; opening balance and postings say 110"));
    }

    @Test
    public void seesAWrongAnswerAWrongRequestAndAPresentKeyWhoseCallsAllFailedDefinitely() {
        BankSetChecker.Intent a = intent("a", 10);
        BankSetChecker.Intent b = intent("b", 20);
        BankSetChecker.Intent c = intent("c", 30);
        applied(1, a);
        applied(2, intent("b", 21)); // b applied with another amount than asked
        applied(3, c);
        checker.record(a, executed(1));
        checker.record(a, replayed(9));
        checker.record(b, executed(2));
        checker.record(c, exhausted(c));

        assertThat(check().violations())
                .anyMatch(v -> v.contains("key a: answered transfer-9 (REPLAYED) but applied transfer 1"))
                .anyMatch(v -> v.contains("key b: acknowledged") && v.contains("but applied"))
                .anyMatch(v -> v.contains("which no caller asked for with this key"))
                .anyMatch(v -> v.contains("key c is present although every call failed definitely"));
    }

    @Test
    public void seesARejectionThatWasAppliedAndARefusalOfTheRequestTheClaimHolds() {
        BankSetChecker.Intent a = intent("a", 10);
        BankSetChecker.Intent b = intent("b", 20);
        applied(1, a);
        applied(2, b);
        checker.record(a, new Outcome.Rejected<>(Failure.of("insufficient_funds", "no"), Instant.now(), false));
        checker.record(b, new Outcome.FingerprintMismatch<>());
        checker.record(b, new IllegalStateException("the completion updated 0 claim rows instead of 1"));

        assertThat(check().violations())
                .anyMatch(v -> v.contains("key a was rejected but applied"))
                .anyMatch(v -> v.contains("was refused as another request, but the claim is its own"))
                .anyMatch(v -> v.contains("unexpected error java.lang.IllegalStateException"));
    }

    @Test
    public void countsARejectionThrownOutOfRunAsAViolation() {
        BankSetChecker.Intent a = intent("a", 10);
        applied(1, a);
        checker.record(a, new io.github.idemtx.core.Rejection("insufficient_funds", "no"));
        checker.record(a, executed(1));

        BankSetChecker.Report report = check();

        assertThat(report.violations()).singleElement().asString().contains("run threw the work's", "applied: 1");
        assertThat(report.ok()).isFalse();
    }
}
