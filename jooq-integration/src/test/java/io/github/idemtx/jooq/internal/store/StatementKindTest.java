package io.github.idemtx.jooq.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.jooq.internal.store.ClaimStatements.Kind;
import org.junit.jupiter.api.Test;

class StatementKindTest {

    @Test
    void eachKindReadsBackFromItsTagAndNoTagIsMistakenForAnother() {
        for (Kind kind : Kind.values()) {
            assertThat(Kind.of(kind.tag() + "select 1")).isEqualTo(kind);
            assertThat(kind.tag()).startsWith("/* idemtx:").endsWith(" */ ");
        }
        assertThat(Kind.of(Kind.RECORD.tag() + "insert")).isEqualTo(Kind.RECORD);
        assertThat(Kind.of(Kind.RECORD_AND_COMMIT.tag() + "insert")).isEqualTo(Kind.RECORD_AND_COMMIT);
    }

    @Test
    void statementsThatAreNotTheLibrarysHaveNoKind() {
        assertThat(Kind.of(null)).isNull();
        assertThat(Kind.of("")).isNull();
        assertThat(Kind.of("select pg_try_advisory_xact_lock(1)")).isNull();
        assertThat(Kind.of("/* idemtx:unknown */ select 1")).isNull();
        assertThat(Kind.of(" /* idemtx:claim */ select 1")).isNull();
    }
}
