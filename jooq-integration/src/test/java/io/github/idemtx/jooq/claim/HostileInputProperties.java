package io.github.idemtx.jooq.claim;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.http.IdempotencyKeyHeader;
import io.github.idemtx.http.InvalidIdempotencyKeyException;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.Db;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.LifecycleContext;
import net.jqwik.api.lifecycle.PropagationMode;
import net.jqwik.api.lifecycle.SkipExecutionHook;

/**
 * Hostile scopes, keys and header values against the real database: each one either works (runs
 * once, then replays) or is refused with the documented exception before any SQL; afterwards the
 * claim table and the business table hold exactly the accepted calls.
 */
@net.jqwik.api.Tag(DatabaseTest.TAG)
@AddLifecycleHook(
        value = HostileInputProperties.SkipWithoutDatabase.class,
        propagateTo = PropagationMode.ALL_DESCENDANTS)
public class HostileInputProperties {

    /**
     * jqwik's side of {@link DatabaseTest}: without a database these properties are skipped with the
     * reason, which the module's first {@code @DatabaseTest} class reports as its one failure.
     */
    public static final class SkipWithoutDatabase implements SkipExecutionHook {
        @Override
        public SkipResult shouldBeSkipped(LifecycleContext context) {
            try {
                TestDatabase.get();
                return SkipResult.doNotSkip();
            } catch (RuntimeException e) {
                return SkipResult.skip(DatabaseTest.Condition.SKIPPED + ": " + e.getMessage());
            }
        }
    }

    /** Every scope this class used, so the final check can look at exactly those. */
    private static final String RUN = "hostile-" + UUID.randomUUID() + "-";

    private static final Set<String> ACCEPTED = ConcurrentHashMap.newKeySet();

    private final IdempotentTransaction<String> idem =
            Db.builder(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();

    @Provide
    public Arbitrary<String> hostile() {
        Arbitrary<String> anyUnicode = Arbitraries.strings().all().ofMaxLength(300);
        Arbitrary<String> nasty = Arbitraries.strings()
                .withChars("'\";\\-%_*/\u0000\u0001\t\n\r \u00a0\u200b\u2028\u00e9\ud800\udc00\ud83d\ude00xX0")
                .ofMaxLength(270);
        Arbitrary<String> sqlish = Arbitraries.of(
                "'; DROP TABLE effect; --",
                "\" OR 1=1 --",
                "$$ select 1 $$",
                "\\x00",
                "%",
                "_",
                "'",
                "\\",
                "k".repeat(255),
                "k".repeat(256),
                "",
                " ",
                "\u0000");
        return Arbitraries.oneOf(anyUnicode, nasty, sqlish);
    }

    @Property(tries = 400)
    public void anyScopeAndKeyEitherWorksExactlyOnceOrIsRefusedBeforeAnySql(
            @ForAll("hostile") String scopeText, @ForAll("hostile") String keyText) {
        Scope scope;
        IdempotencyKey key;
        try {
            scope = Scope.of(RUN + scopeText);
            key = Db.key(keyText);
        } catch (IllegalArgumentException | NullPointerException refused) {
            assertThat(refused.getMessage()).containsAnyOf("scope", "key");
            return;
        }
        run(scope, key);
    }

    @Property(tries = 400)
    public void anyHeaderValueEitherWorksExactlyOnceOrIsRefusedWithAReason(@ForAll("hostile") String header) {
        IdempotencyKey key;
        try {
            key = IdempotencyKeyHeader.parse(Db.keyText(header));
        } catch (InvalidIdempotencyKeyException refused) {
            assertThat(refused.reason()).isNotNull();
            return;
        }
        run(Scope.of(RUN + "header"), key);
    }

    private void run(Scope scope, IdempotencyKey key) {
        if (Db.claims(scope, key) > 0) {
            return; // the generator repeated itself; the first run already checked this pair
        }
        Fingerprint fingerprint = Fingerprint.sha256(scope.value() + "\u0000" + key.value());
        Outcome<String> first =
                idem.run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, key.value()));
        Outcome<String> again =
                idem.run(scope, key, fingerprint, tx -> "effect-" + Db.writeEffect(tx, scope, key, "twice"));

        assertThat(first).isInstanceOf(Outcome.Executed.class);
        assertThat(again)
                .isInstanceOfSatisfying(
                        Outcome.Replayed.class,
                        r -> assertThat(r.value()).isEqualTo(((Outcome.Executed<String>) first).value()));
        assertThat(Db.effects(scope, key)).isEqualTo(1);
        ACCEPTED.add(scope.value() + "\u0000" + key.value());
    }

    @AfterContainer
    public static void theTablesHoldExactlyTheAcceptedCalls() {
        if (TestDatabase.failedAlready()) {
            return; // nothing ran: the missing database is reported once, by a @DatabaseTest class
        }
        int claims = Db.DSL_CONTEXT
                .resultQuery(
                        "SELECT count(*)::int FROM " + Db.SCHEMA + ".idempotency_claim WHERE scope LIKE ?",
                        RUN.replace("-", "\\-") + "%")
                .fetchSingle()
                .get(0, Integer.class);
        int effects = Db.DSL_CONTEXT
                .resultQuery(
                        "SELECT count(*)::int FROM " + Db.SCHEMA + ".effect WHERE scope LIKE ?",
                        RUN.replace("-", "\\-") + "%")
                .fetchSingle()
                .get(0, Integer.class);
        assertThat(claims).as("claims of accepted calls only").isEqualTo(ACCEPTED.size());
        assertThat(effects).as("one effect per accepted call").isEqualTo(ACCEPTED.size());
        assertThat(Db.DSL_CONTEXT
                        .resultQuery("SELECT to_regclass(?)::text", Db.SCHEMA + ".effect")
                        .fetchSingle()
                        .get(0, String.class))
                .as("the business table survived every SQL-looking key")
                .isNotNull();
    }

    @Property(tries = 200)
    public void aKeyUsedByOneTenantNeverYieldsThatTenantsAnswerToAnother(
            @ForAll("hostile") String keyText, @ForAll boolean sameRequest) {
        IdempotencyKey key;
        try {
            key = Db.key(keyText);
        } catch (IllegalArgumentException | NullPointerException refused) {
            return;
        }
        Scope a = Scope.of(RUN + "iso-a-" + UUID.randomUUID());
        Scope b = Scope.of(RUN + "iso-b-" + UUID.randomUUID());
        Fingerprint fa = Fingerprint.sha256("request of a");
        Fingerprint fb = sameRequest ? fa : Fingerprint.sha256("request of b");

        idem.run(a, key, fa, tx -> "secret of a " + Db.writeEffect(tx, a, key, "a"));
        Outcome<String> seenByB = idem.run(b, key, fb, tx -> "answer of b " + Db.writeEffect(tx, b, key, "b"));

        assertThat(seenByB)
                .isInstanceOfSatisfying(
                        Outcome.Executed.class,
                        e -> assertThat((String) e.value()).startsWith("answer of b"));
        ACCEPTED.add(a.value() + "\u0000" + key.value());
        ACCEPTED.add(b.value() + "\u0000" + key.value());
    }
}
