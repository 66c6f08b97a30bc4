package io.github.idemtx.jooq.claim;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.sql.Connection;
import org.jooq.ConnectionProvider;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;

/** Bad input is refused before any connection is taken, let alone any SQL sent. */
class ArgumentValidationTest {

    private static final DSLContext NO_DATABASE = DSL.using(
            new ConnectionProvider() {
                @Override
                public Connection acquire() {
                    throw new AssertionError("no connection may be taken for invalid input");
                }

                @Override
                public void release(Connection connection) {
                    throw new AssertionError("no connection may be taken for invalid input");
                }
            },
            SQLDialect.POSTGRES);

    private final IdempotentTransaction<String> idem =
            IdempotentTransaction.create(NO_DATABASE, IdempotencyPolicy.defaults(), ResultCodec.utf8());
    private final Scope scope = Scope.of("tenant");
    private final IdempotencyKey key = IdempotencyKey.of("key-1");
    private final Fingerprint fingerprint = Fingerprint.sha256("request");

    @Test
    void refusesNullArgumentsNamingThemBeforeTakingAConnection() {
        assertThatThrownBy(() -> idem.run(null, key, fingerprint, tx -> "x"))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("scope");
        assertThatThrownBy(() -> idem.run(scope, null, fingerprint, tx -> "x"))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("key");
        assertThatThrownBy(() -> idem.run(scope, key, null, tx -> "x"))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("fingerprint");
        assertThatThrownBy(() -> idem.run(scope, key, fingerprint, null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("work");
    }

    @Test
    void refusesMalformedScopesKeysAndFingerprintsWhenTheyAreMade() {
        assertThatThrownBy(() -> Scope.of(" "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("scope");
        assertThatThrownBy(() -> Scope.of("a\u0000b"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("scope");
        assertThatThrownBy(() -> IdempotencyKey.of(""))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key");
        assertThatThrownBy(() -> IdempotencyKey.of("k".repeat(256)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("255");
        assertThatThrownBy(() -> IdempotencyKey.of("clé"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("printable ASCII");
        assertThatThrownBy(() -> IdempotencyKey.of("a\u0000")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Fingerprint.of(new byte[20]))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("SHA-256");
    }

    @Test
    void refusesNullOrInvalidConfiguration() {
        assertThatThrownBy(() -> IdempotentTransaction.create(null, IdempotencyPolicy.defaults(), ResultCodec.utf8()))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("dsl");
        assertThatThrownBy(() -> IdempotentTransaction.create(NO_DATABASE, null, ResultCodec.utf8()))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("policy");
        assertThatThrownBy(() -> IdempotentTransaction.create(NO_DATABASE, IdempotencyPolicy.defaults(), null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("codec");
        assertThatThrownBy(() -> IdempotentTransaction.builder(NO_DATABASE, ResultCodec.utf8())
                        .schema("public; drop"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("schema");
    }
}
